-- Which module plays each part core calls (core/parts.lua says why core names parts, not
-- modules). The Lua layers, bottom to top: core/, agents/ (each agent, and their registry),
-- features/, then the entry points (init.lua, health.lua, blink.lua, this file, install/); a
-- module requires only its own layer and those below (tests/layout.rs). Loaded with the
-- plugin: these are paths, nothing here is required until core calls it.
require("pi-ide.core.parts").declare({
  parts = {
    -- Every agent's module (agents/init.lua): options, status lines, what the server serves.
    agents = "pi-ide.agents",
    -- What the server hands each event to (core/server.lua).
    tools = "pi-ide.features.tools",
    review = "pi-ide.features.review",
    checkpoints = "pi-ide.features.checkpoints",
    -- What agents wrote by themselves, watched while one is connected or running.
    pending = "pi-ide.features.pending",
    -- Attached while the server runs: the selection, the diagnostics snapshot, the typing
    -- that asks for suggestions.
    selection = "pi-ide.features.selection",
    diagnostics = "pi-ide.features.tools.diagnostics",
    suggestions = "pi-ide.features.suggest.events",
    terminal = "pi-ide.features.terminal",
  },
  -- :PiIde subcommands a feature brings: the module whose `commands[name]` it is. Core's own
  -- (start, stop, restart, status, log) are core/commands.lua's; an agent's, its module's.
  commands = {
    accept = "pi-ide.features.review",
    reject = "pi-ide.features.review",
    hunk = "pi-ide.features.review",
    panes = "pi-ide.features.review",
    review = "pi-ide.features.review",
    suggest = "pi-ide.features.suggest",
    toggle = "pi-ide.features.suggest",
    stats = "pi-ide.features.suggest",
    model = "pi-ide.features.models",
    send = "pi-ide.features.mention",
    add = "pi-ide.features.mention",
    open = "pi-ide.features.terminal",
    close = "pi-ide.features.terminal",
    chat = "pi-ide.features.chat.command",
    ask = "pi-ide.features.chat.command",
    abort = "pi-ide.features.chat.command",
    new = "pi-ide.features.chat.command",
    resume = "pi-ide.features.chat.command",
    compact = "pi-ide.features.chat.command",
    export = "pi-ide.features.chat.command",
    checkpoint = "pi-ide.features.checkpoints",
    changes = "pi-ide.features.checkpoints",
    undo = "pi-ide.features.checkpoints",
    build = "pi-ide.install.build",
  },
  -- The features' lines in :PiIde status, after the server's, in this order.
  status = { { "review", always = true }, { "terminal" }, { "checkpoints" }, { "pending" } },
})

return true
