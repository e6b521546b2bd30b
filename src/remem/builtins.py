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
    from .embed.embedders import BUILTIN

    for name, factory in BUILTIN.items():
        register(name, factory)


@hookimpl
def register_installers(register: Register) -> None:
    from .integrations.installers import BUILTIN

    for installer in BUILTIN:
        register(installer)


def channel_specs() -> list[ChannelSpec]:
    """The built-in channels as declared once in ``recall/gate.py`` (``CHANNEL_SPECS``: weight, packet
    gate, family, layer), in the plugin contract's shape."""
    from .recall.gate import CHANNEL_SPECS

    return [ChannelSpec(c.name, weight=c.weight, gated=c.gated, family=c.family, layer=c.layer)
            for c in CHANNEL_SPECS]


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
    from .cli import bench, data, hooks, learned, memory, plugins, privacy, recall, service, sync, team

    for mod in (memory, data, sync, recall, service, hooks, bench, learned, plugins, privacy, team):
        for command in mod.COMMANDS:
            register(command)


@hookimpl
def register_layers(register: Register) -> None:
    from .layers.service import BUILTIN_LAYER
    from .plugins import LayerSpec

    # remem's own learning (remem/layers/): its extractors run as one core inside the learn job and
    # its tables are remem's migration m009; registered so `remem plugins` lists it like any layer
    register(LayerSpec(BUILTIN_LAYER, "L2 preferences, conventions, corrections, decisions and error → fix "
                       "procedures; L3 the project's commands, package manager and stack (remem/layers/)"))
