"""WorkBuddy, Pi and qwenwork: the full ``remem-memory`` skill (search, get, add through the CLI).

These agents have no hook API remem can use yet; their history is imported by ``sources/`` and
the skill lets the agent search and store memories on demand.
"""

from __future__ import annotations

from .base import HookAgent, skill_file


class SkillOnly(HookAgent):
    events = []
    owned = [skill_file()]

    def __init__(self, agent: str, label: str, dir_var: str, dir_default: str, binaries: tuple[str, ...]) -> None:
        self.agent = agent
        self.label = label
        self.dir_var = dir_var
        self.dir_default = dir_default
        self.binaries = binaries


WORKBUDDY = SkillOnly("workbuddy", "WorkBuddy", "WORKBUDDY_HOME", ".workbuddy", ("workbuddy",))
PI = SkillOnly("pi", "Pi", "PI_CODING_AGENT_DIR", ".pi/agent", ("pi",))
QWENWORK = SkillOnly("qwenwork", "qwenwork", "QWENWORK_HOME", ".qwenworkcn", ("qwenwork",))
