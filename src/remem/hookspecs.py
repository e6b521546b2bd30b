"""The hooks a remem plugin can implement (pluggy). :mod:`remem.plugins` loads and reads them.

Every hook receives one argument, ``register``, and calls it once per thing it adds; names are
unique across all plugins (the built-ins, :mod:`remem.builtins`, register first and keep theirs).
Implement a hook with the same name and ``@hookimpl``::

    from remem.plugins import hookimpl

    @hookimpl
    def register_sources(register):
        register(MyAgentSource())

A hook that raises, or registers something of the wrong shape or a taken name, is reported and its
contribution skipped (``remem plugins`` lists both). Hooks run lazily, the first time remem needs
that registry, and once per process.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

hookspec = pluggy.HookspecMarker("remem")
hookimpl = pluggy.HookimplMarker("remem")

Register = Callable[..., None]


@hookspec
def register_sources(register: Register) -> None:
    """Agent histories to import: ``register(source)``.

    A source (:class:`remem.sources.base.Source`) has ``agent`` (its agent id; the registry key is
    its canonical form, :func:`remem.agents.canonical_agent`), ``format``, ``discover(env) -> [Path]``
    (history roots, from ``env`` only), ``list_units(root, stats) -> [Unit]`` and
    ``read(unit, stats) -> Iterator[Message]``. Parsers never raise on bad input; they count it in
    the ``ParseStats``. ``remem sources`` lists it when ``discover`` finds a root; ``remem sync``
    imports it.
    """


@hookspec
def register_embedders(register: Register) -> None:
    """Embedding models: ``register(name, factory)``; ``factory(**options) -> Embedder``
    (:class:`remem.embed.embedders.Embedder`: ``model_id``, ``dim``, ``embed(texts) -> float32 array``,
    L2-normalized rows). Selected with ``embedding.model = NAME`` or ``REMEM_EMBEDDING_MODEL``."""


@hookspec
def register_installers(register: Register) -> None:
    """Agent integrations: ``register(installer)``, an object with ``agent``, ``label``,
    ``detect(ctx)``, ``install(ctx, replace=)``, ``remove(ctx)`` and ``status(ctx)``
    (:class:`remem.integrations.installers.base.Installer`; ``HookAgent`` there does most of it).
    ``remem hooks install|remove|status AGENT`` use it."""


@hookspec
def register_recall_channels(register: Register) -> None:
    """Recall channels: ``register(ChannelSpec(name, weight, gated, family, layer, run))``
    (:class:`remem.plugins.ChannelSpec`). Every channel declares whether the packet gate applies
    (``gated``) and its ``family`` ("word", "vector" or "other"); one that does not is refused.
    A layer's channels (``LayerSpec.channels``) are added by ``register_layers`` instead."""


@hookspec
def register_job_kinds(register: Register) -> None:
    """Background job kinds the daemon runs: ``register(kind, handler)``;
    ``handler(ctx: server.jobs.JobContext) -> dict`` (``ctx.mem``, ``ctx.payload``, ``ctx.report``;
    the job's result; raise ``server.jobs.NoRetry`` for a failure a retry cannot fix). The daemon's
    job runner takes every registered kind; queue one with the jobs API under that kind."""


@hookspec
def register_commands(register: Register) -> None:
    """``remem`` subcommands: ``register(command)``, a :class:`click.Command` or group; its name
    is the subcommand's (``remem --help`` lists it). Decorate the body with
    ``remem.cli.handle_errors`` for one-line errors, and open the store with ``remem.cli.open_mem``."""


@hookspec
def register_layers(register: Register) -> None:
    """Memory layers above the raw turns: ``register(LayerSpec(name, description, extractors, channels,
    migrations))``. remem's own learning registers as the layer ``"learned"`` (remem/layers/).

    * ``name``: a unique layer name; its memories are stored as learned memories with layer "L2"
      ("L3" when the name is "L3") and ``data.layer = name``.
    * ``extractors``: functions ``extract(mem, turns) -> list[dict]`` the learn job calls for every
      project whose turns changed (``remem learn``, and the daemon after syncs and captures), with the
      project's turns in time order (dicts with id, session_id, request, reply, actions_json, started_at
      …); each returned dict is one derived memory with ``kind``, ``text`` and ``evidence`` (the ids of
      the turns it came from). Deterministic, no network. What they derive waits as a candidate in the
      review queue (never in a packet) until the user approves it; a memory citing none of the given
      turns is dropped; forgetting its evidence turns removes it.
    * ``channels``: the layer's recall channels (``ChannelSpec`` with ``layer=name``), registered
      as recall channels with the same rules (a declared gate and family, a unique name).
    * ``migrations``: per storage engine (``{"sqlite": (m001_todo_index, ...)}``), the layer's own
      ordered, forward-only schema steps, each run once in its own transaction when the store opens
      and recorded as ``"<layer>:<function name>"``.
    """


def spec_names() -> list[str]:
    """The hook names above (the architecture test compares them with plugins.KINDS)."""
    return [n for n, f in globals().items() if n.startswith("register_") and callable(f)]

