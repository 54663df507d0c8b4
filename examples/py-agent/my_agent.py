from simulator import AgentTurn, Message, ToolCall


class GoldReplayAgent:
    def __init__(self, ctx):  # ctx: the TrialContext of one trial
        self.todo = list(ctx.task.gold_actions)  # cheating: a real agent never reads these
        self.answer = " ".join(ctx.task.required_outputs)  # what the user must be told (e.g. a refund amount)

    def step(self, messages):  # the conversation so far -> one tool call, or a message to the user
        if self.todo:
            action = self.todo.pop(0)
            call = ToolCall(id=f"call-{len(messages)}", name=action.name, arguments=dict(action.arguments))
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]))
        return AgentTurn(message=Message(role="assistant", content=f"Done. {self.answer} Anything else?"))


def build(ctx):  # the factory tausim calls once per trial
    return GoldReplayAgent(ctx)
