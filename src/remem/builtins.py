"""The built-in plugin: remem's own sources, embedders, integrations, recall channels, job kinds and
commands, registered through the same hooks a third-party plugin implements (:mod:`remem.hookspecs`).

Each list lives beside what it lists (``sources.BUILTIN``, ``index.embed.BUILTIN``,
``integrations.installers.BUILTIN``, ``server.jobkinds.HANDLERS``, the ``COMMANDS`` of each
``cli`` module); the imports happen when a registry is first read, never at startup.
"""

from __future__ import annotations

from .hookspecs import Register, hookimpl
from .plugins import ChannelSpec


@hookimpl
def register_sources(register: Register) -> None:
    from .sources import BUILTIN

    for source in BUILTIN:
        register(source)


@hookimpl
def register_embedders(register: Register) -> None:
    from .index.embed import BUILTIN

    for name, factory in BUILTIN.items():
        register(name, factory)


@hookimpl
def register_installers(register: Register) -> None:
    from .integrations.installers import BUILTIN

    for installer in BUILTIN:
        register(installer)


#: channels that only reorder (never a reason to show a memory): the packet gate does not apply
UNGATED = frozenset({"recency"})


def channel_specs() -> list[ChannelSpec]:
    """Today's channels, described from the recall settings and gates (until recall/ declares a
    spec list of its own: then ``register_recall_channels`` registers that list instead). A channel
    neither gated nor declared ungated has no spec and is refused."""
    from .recall.config import CHANNELS, DEFAULT
    from .recall.direct import VECTOR_CHANNELS, WORD_CHANNELS
    from .recall.entry import _GATED

    undeclared = [c for c in CHANNELS if c not in _GATED and c not in UNGATED]
    if undeclared:
        raise ValueError(f"recall channel(s) {undeclared} declare no gate (recall.entry._GATED or UNGATED)")
    return [ChannelSpec(name, weight=DEFAULT.weights.get(name, 0.0), gated=name in _GATED,
                        family="word" if name in WORD_CHANNELS else "vector" if name in VECTOR_CHANNELS else "other",
                        layer="L1")
            for name in CHANNELS]


@hookimpl
def register_recall_channels(register: Register) -> None:
    for spec in channel_specs():
        register(spec)


@hookimpl
def register_job_kinds(register: Register) -> None:
    from .server.jobkinds import HANDLERS

    for kind, handler in HANDLERS.items():
        register(kind, handler)


@hookimpl
def register_commands(register: Register) -> None:
    from .cli import bench, data, hooks, learned, memory, plugins, recall, service, sync

    for mod in (memory, data, sync, recall, service, hooks, bench, learned, plugins):
        for command in mod.COMMANDS:
            register(command)
