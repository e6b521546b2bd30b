"""The one plugin contract: every extension point of remem is a hook of :mod:`remem.hookspecs`.

The built-ins are a plugin like any other (:mod:`remem.builtins`, registered first); third-party
plugins are modules named by an entry point in the ``remem`` group (``[project.entry-points.remem]``
in their ``pyproject.toml``). Read the registries through the accessors here — :func:`sources`,
:func:`embedders`, :func:`installers`, :func:`recall_channels`, :func:`job_kinds`,
:func:`cli_commands`, :func:`layers` — each a dict from a unique name to what was registered.

A plugin that fails to import, implements a hook remem does not know, raises inside a hook, registers
something of the wrong shape or a name another plugin already took is reported (:func:`problems`,
the ``remem.plugins`` log, a warning line from the ``remem`` command) and that contribution is skipped;
remem itself keeps working. ``REMEM_NO_PLUGINS=1`` loads the built-ins only.

This module is light on purpose (no pluggy at import): the older registry names (``SOURCES``,
``EMBEDDERS``, ``INSTALLERS``) are :class:`Registry` views over it, and pluggy and the entry points
are loaded on the first read. The hook path never reads a registry.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pluggy

    from .embed.embedders import Embedder
    from .integrations.installers.base import Installer
    from .sources.base import Source

GROUP = "remem"                  # the pluggy project name and the entry-point group
DISABLE_ENV = "REMEM_NO_PLUGINS"  # "1": built-ins only (tests, a broken plugin you cannot uninstall)
BUILTIN = "remem.builtins"
FAMILIES = ("word", "vector", "other")

T = TypeVar("T")


class PluginError(ValueError):
    """Something a plugin registered has the wrong shape (reported, never raised to the user)."""


# -- what plugins register besides plain objects ---------------------------------------------------

@dataclass(frozen=True)
class ChannelSpec:
    """One recall channel: a ranked list of candidates fused by reciprocal rank fusion.

    ``weight`` is its default weight in the fusion (0 = off unless a configuration turns it on);
    ``gated``: whether the packet gate applies (a hit from a gated channel is a reason to show a
    memory to an agent; an ungated one only reorders, e.g. recency); ``family``: "word" (lexical,
    counted by the coverage gate), "vector" (similarity, checked against the model's related
    margin) or "other"; ``layer``: what it finds ("L1" turns; issue 16's derived memories "L2"/"L3").
    ``run``: the function producing its candidates, or None for the built-ins the recall engine
    dispatches by name.
    """

    name: str
    weight: float
    gated: bool
    family: str
    layer: str = "L1"
    run: Callable[..., Any] | None = None


@dataclass(frozen=True)
class LayerSpec:
    """A memory layer above the raw turns (see ``hookspecs.register_layers`` for what to put here)."""

    name: str
    description: str
    extractors: tuple[Callable[..., Any], ...] = ()
    channels: tuple[ChannelSpec, ...] = ()
    migrations: Mapping[str, tuple[Callable[..., Any], ...]] = field(default_factory=dict)


# -- the kinds of registration ----------------------------------------------------------------------

def _agent_key(obj: Any, what: str, methods: tuple[str, ...]) -> tuple[str, Any]:
    from .agents import canonical_agent

    missing = [m for m in methods if not callable(getattr(obj, m, None))]
    if missing or not isinstance(getattr(obj, "agent", None), str):
        raise PluginError(f"not {what}: {obj!r} (needs .agent and {', '.join(methods)})")
    return canonical_agent(obj.agent), obj


def _source(source: Any) -> tuple[str, Any]:
    key, obj = _agent_key(source, "a source", ("discover", "list_units", "read"))
    # a second format of one agent's history (SpecStory's Cursor exports) registers under its own name
    from .agents import canonical_agent

    return canonical_agent(getattr(source, "name", "") or key), obj


def _installer(installer: Any) -> tuple[str, Any]:
    return _agent_key(installer, "an installer", ("detect", "install", "remove", "status"))


def _named(what: str) -> Callable[[str, Any], tuple[str, Any]]:
    def entry(name: str, obj: Any) -> tuple[str, Any]:
        if not isinstance(name, str) or not name.strip() or not callable(obj):
            raise PluginError(f"{what} needs a name and a callable, got {name!r}, {obj!r}")
        return name, obj
    return entry


def _channel(spec: Any) -> tuple[str, Any]:
    problems = []
    if not isinstance(getattr(spec, "name", None), str) or not spec.name:
        problems.append("a name")
    if not isinstance(getattr(spec, "gated", None), bool):
        problems.append("gated (True/False: does the packet gate apply?)")
    if getattr(spec, "family", None) not in FAMILIES:
        problems.append(f"a family ({' / '.join(FAMILIES)})")
    if not isinstance(getattr(spec, "weight", None), int | float):
        problems.append("a default weight")
    if not isinstance(getattr(spec, "layer", None), str):
        problems.append("a layer")
    if problems:
        raise PluginError(f"recall channel {getattr(spec, 'name', spec)!r} does not declare {', '.join(problems)}")
    return spec.name, spec


def _command(command: Any) -> tuple[str, Any]:
    import click

    if not isinstance(command, click.Command) or not command.name:
        raise PluginError(f"not a click command: {command!r}")
    return command.name, command


def _layer(spec: Any) -> tuple[str, Any]:
    if not isinstance(spec, LayerSpec):
        raise PluginError(f"not a LayerSpec: {spec!r}")
    for ch in spec.channels:
        _channel(ch)
    return spec.name, spec


#: registry kind → (hook name, what one item is called, register(...) arguments → (name, object))
KINDS: dict[str, tuple[str, str, Callable[..., tuple[str, Any]]]] = {
    "sources": ("register_sources", "source", _source),
    "embedders": ("register_embedders", "embedder", _named("an embedder")),
    "installers": ("register_installers", "installer", _installer),
    "recall_channels": ("register_recall_channels", "recall channel", _channel),
    "job_kinds": ("register_job_kinds", "job kind", _named("a job kind")),
    "cli_commands": ("register_commands", "command", _command),
    "layers": ("register_layers", "layer", _layer),
}


# -- the manager ------------------------------------------------------------------------------------

_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None
_problems: dict[str, None] = {}                        # ordered set of messages
_dists: dict[str, str] = {}                            # plugin name → "distribution version"
_cache: dict[str, dict[str, Any]] = {}
_origin: dict[str, dict[str, str]] = {}                # kind → item name → plugin that registered it
_runtime: dict[str, dict[str, Any]] = {k: {} for k in KINDS}   # added by code (register_source, …)


def _problem(plugin: str, message: str) -> None:
    text = f"plugin {plugin!r}: {message}"
    if text not in _problems:
        _problems[text] = None
        import logging  # only now: the remem command never imports it otherwise

        log = logging.getLogger("remem.plugins")
        if not log.handlers:
            log.addHandler(logging.NullHandler())   # the daemon's log gets it; the CLI prints its own line
        log.warning("%s (skipped)", text)


def manager() -> pluggy.PluginManager:
    """The loaded plugin manager: the built-ins, then every entry point of the ``remem`` group."""
    global _pm
    with _lock:
        if _pm is None:
            import pluggy

            from . import builtins, hookspecs

            pm = pluggy.PluginManager(GROUP)
            pm.add_hookspecs(hookspecs)
            pm.register(builtins, name=BUILTIN)
            if os.environ.get(DISABLE_ENV, "").strip() not in ("1", "true", "yes"):
                _load_entry_points(pm)
            _pm = pm
        return _pm


_third: bool | None = None


def third_party() -> bool:
    """Whether any plugin besides remem's own may be registered — cheap, without importing pluggy
    when none is installed, so the paths that only need to know "is there anything extra?" (recall's
    plugin channels, the layers' migrations on the hook's local fallback) stay light."""
    global _third
    if _pm is not None:
        return any(name != BUILTIN for name, _ in _pm.list_name_plugin())
    if os.environ.get(DISABLE_ENV, "").strip() in ("1", "true", "yes"):
        return False
    if _third is None:
        _third = _may_declare_entry_points()
    return _third


def _may_declare_entry_points() -> bool:
    """False only when no installed distribution on ``sys.path`` names the ``remem`` group: a look
    at the ``entry_points.txt`` files, so that a ``remem`` command without plugins does not pay for
    importing ``importlib.metadata`` (25 ms). Anything it cannot see through (a zip on the path,
    an unreadable directory) answers True, and the real lookup decides."""
    import sys

    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                names = [e.name for e in it if e.name.endswith((".dist-info", ".egg-info"))]
        except NotADirectoryError:
            return True                      # a zip archive: importlib.metadata reads inside
        except OSError:
            continue                         # a missing directory holds no distribution
        for name in names:
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt"), encoding="utf-8") as f:
                    if f"[{GROUP}]" in f.read():
                        return True
            except FileNotFoundError:
                continue
            except OSError:
                return True
    return False


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """``pm.load_setuptools_entrypoints(GROUP)``, one plugin at a time: one that fails is skipped."""
    if not _may_declare_entry_points():
        return
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP):
        if pm.get_plugin(ep.name) is not None:
            _problem(ep.name, "another plugin already has this name")
            continue
        try:
            plugin = ep.load()
        except Exception as e:
            _problem(ep.name, f"failed to import {ep.value}: {type(e).__name__}: {e}")
            continue
        if _add(pm, plugin, ep.name) and ep.dist is not None:
            _dists[ep.name] = f"{ep.dist.name} {ep.dist.version}"


def _add(pm: pluggy.PluginManager, plugin: object, name: str) -> bool:
    try:
        pm.register(plugin, name=name)
        pm.check_pending()       # a hook remem does not define (a typo) is an error, not silence
    except Exception as e:
        if pm.get_plugin(name) is not None:
            pm.unregister(name=name)
        hooks = ", ".join(hook for hook, *_ in KINDS.values())
        _problem(name, f"{type(e).__name__}: {e} (remem's hooks: {hooks})")
        return False
    return True


def register(plugin: object, name: str) -> bool:
    """Register a plugin object or module in this process (tests, embedding applications); False
    (and a reported problem) when it is not a valid plugin."""
    with _lock:
        ok = _add(manager(), plugin, name)
        _cache.clear()
        return ok


def unregister(name: str) -> None:
    with _lock:
        if manager().get_plugin(name) is not None:
            manager().unregister(name=name)
        _cache.clear()


def reset() -> None:
    """Forget the loaded manager (the next read loads the plugins again); run-time additions stay."""
    global _pm, _third
    with _lock:
        _pm = None
        _third = None
        _problems.clear()
        _dists.clear()
        _cache.clear()
        _origin.clear()


def problems() -> list[str]:
    """Every plugin contribution that was skipped, and why (one line each)."""
    with _lock:
        return list(_problems)


# -- the registries ---------------------------------------------------------------------------------

def _collect(kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    hook_name, what, entry = KINDS[kind]
    pm = manager()
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}

    def take(plugin: str, items: list[tuple[str, Any]]) -> None:
        names = [n for n, _ in items]
        taken = [f"{what} {n!r} is already registered by {origin[n]!r}" for n in names if n in origin]
        taken += [f"registers {what} {n!r} twice" for i, n in enumerate(names) if n in names[:i]]
        if taken:
            _problem(plugin, "; ".join(taken))
            return
        for n, obj in items:
            out[n] = obj
            origin[n] = plugin

    # in registration order (pluggy calls them the other way round): the built-ins keep their names
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        got: list[tuple[Any, ...]] = []
        try:
            impl.function(**dict.fromkeys(impl.argnames, lambda *args, got=got: got.append(args)))
            items = [_call(entry, what, args) for args in got]
        except Exception as e:
            _problem(impl.plugin_name, f"{hook_name} failed: {type(e).__name__}: {e}")
            continue
        take(impl.plugin_name, items)
    if kind == "recall_channels":         # a layer's channels are recall channels like the others
        for layer_name, layer in _registry("layers").items():
            take(f"{_origin['layers'][layer_name]} (layer {layer_name})", [_channel(ch) for ch in layer.channels])
    for n, obj in _runtime[kind].items():  # added by code at run time: explicit, so it may replace
        out[n] = obj
        origin[n] = "runtime"
    return out, origin


def _call(entry: Callable[..., tuple[str, Any]], what: str, args: tuple[Any, ...]) -> tuple[str, Any]:
    want = entry.__code__.co_argcount
    if len(args) != want:
        shape = f"(name, {what})" if want == 2 else f"({what})"
        raise PluginError(f"register{shape} was called with {len(args)} argument(s)")
    return entry(*args)


def _registry(kind: str) -> dict[str, Any]:
    with _lock:
        if kind not in _cache:
            _cache[kind], _origin[kind] = _collect(kind)
        return _cache[kind]


def origins(kind: str) -> dict[str, str]:
    """Which plugin registered each name of one registry kind."""
    with _lock:
        _registry(kind)
        return dict(_origin[kind])


def sources() -> dict[str, Source]:
    """Agent sources by canonical agent id."""
    return dict(_registry("sources"))


def embedders() -> dict[str, Callable[..., Embedder]]:
    """Embedder factories by model name: ``factory(**options) -> Embedder``."""
    return dict(_registry("embedders"))


def installers() -> dict[str, Installer]:
    """Agent integrations (hooks, skills, notes) by canonical agent id."""
    return dict(_registry("installers"))


def recall_channels() -> dict[str, ChannelSpec]:
    """Recall channels by name, with their weight, gate, family and layer (layers' channels included)."""
    return dict(_registry("recall_channels"))


def job_kinds() -> dict[str, Callable[..., Any]]:
    """Background job handlers by kind: ``handler(ctx: JobContext) -> dict`` (the daemon runs these)."""
    return dict(_registry("job_kinds"))


def cli_commands() -> dict[str, Any]:
    """``remem`` subcommands (click commands and groups) by name."""
    return dict(_registry("cli_commands"))


def layers() -> dict[str, LayerSpec]:
    """Memory layers above the raw turns by name."""
    return dict(_registry("layers"))


def loaded() -> list[dict[str, Any]]:
    """The plugins in this process: name, distribution, and the hooks each implements."""
    pm = manager()
    with _lock:
        return [{"name": name, "distribution": _dists.get(name, "remem (built in)" if name == BUILTIN else ""),
                 "hooks": sorted(h.name for h in pm.get_hookcallers(plugin) or [])}
                for name, plugin in pm.list_name_plugin()]


class Registry(MutableMapping[str, T]):
    """A live view of one registry kind under an older name (``sources.SOURCES``, ``embed.EMBEDDERS``,
    ``installers.INSTALLERS``). Reading loads the plugins; assigning adds (or replaces) a name for
    this process, as ``register_source`` and ``register_embedder`` do; only such run-time additions
    can be deleted."""

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown registry kind {kind!r}")
        self.kind = kind

    def __getitem__(self, name: str) -> T:
        return _registry(self.kind)[name]  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(list(_registry(self.kind)))

    def __len__(self) -> int:
        return len(_registry(self.kind))

    def __setitem__(self, name: str, value: T) -> None:
        with _lock:
            _runtime[self.kind][name] = value
            _cache.pop(self.kind, None)

    def __delitem__(self, name: str) -> None:
        with _lock:
            if name not in _runtime[self.kind]:
                raise KeyError(f"{name!r} was registered by a plugin, not at run time")
            del _runtime[self.kind][name]
            _cache.pop(self.kind, None)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self)})"


def __getattr__(name: str) -> Any:
    """``from remem.plugins import hookimpl`` (pluggy is imported only then)."""
    if name == "hookimpl":
        from .hookspecs import hookimpl

        return hookimpl
    if name == "pm":
        return manager()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
