"""The airline reference agent's dialogues.

The machinery (:mod:`.core`), requests about a reservation (:mod:`.changes`) and new bookings (:mod:`.booking`).
"""

from domains.airline._dialogues.booking import BookingDialogues
from domains.airline._dialogues.changes import ChangeDialogues
from domains.airline._dialogues.core import Call, Dialogue, DialogueCore, Result, Say, Session

__all__ = ["BookingDialogues", "Call", "ChangeDialogues", "Dialogue", "DialogueCore", "Result", "Say", "Session"]
