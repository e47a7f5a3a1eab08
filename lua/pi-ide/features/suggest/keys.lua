-- Insert-mode keys for suggestions. Every action is a <Plug> map; the defaults map keys to them
-- only while a suggestion is shown. Otherwise a key does exactly what it did before: the
-- mapping it had when pi-ide.nvim mapped it, or its own built-in meaning.
local M = {}

-- Each configurable action: its <Plug> name and what it calls in pi-ide.suggest (with what).
-- plugin/pi-ide.lua defines the <Plug> maps from this table.
M.actions = {
  accept = { plug = "<Plug>(PiIdeAccept)", fn = "accept", arg = "all" },
  accept_word = { plug = "<Plug>(PiIdeAcceptWord)", fn = "accept", arg = "word" },
  accept_line = { plug = "<Plug>(PiIdeAcceptLine)", fn = "accept", arg = "line" },
  next = { plug = "<Plug>(PiIdeNext)", fn = "cycle", arg = 1 },
  prev = { plug = "<Plug>(PiIdePrev)", fn = "cycle", arg = -1 },
  dismiss = { plug = "<Plug>(PiIdeDismiss)", fn = "dismiss" },
  trigger = { plug = "<Plug>(PiIdeSuggest)", fn = "trigger", arg = true },
}

--- Defines the Insert-mode <Plug> maps (cheap: the suggestion code loads when one is used).
function M.define_plugs()
  for _, a in pairs(M.actions) do
    vim.keymap.set("i", a.plug, function()
      require("pi-ide.features.suggest")[a.fn](a.arg)
    end, { desc = "pi-ide: " .. a.fn })
  end
end

-- Actions that only mean something while a suggestion is shown; the rest always act.
local only_when_shown = { accept = true, accept_word = true, accept_line = true, dismiss = true }

local mapped = {} -- lhs -> true, what we mapped (to undo on re-apply)
local fallbacks = {} -- lhs -> <Plug> doing what lhs did before we first mapped it
local originals = {} -- lhs -> the user's mapping we replaced (maparg dict), put back on re-apply

-- A <Plug> that does what `lhs` did before we mapped it (captured once, the first time).
local function fallback_plug(lhs)
  if fallbacks[lhs] then
    return fallbacks[lhs]
  end
  local plug = ("<Plug>(PiIdeFallback%d)"):format(vim.tbl_count(fallbacks) + 1)
  fallbacks[lhs] = plug
  local old = vim.fn.maparg(lhs, "i", false, true)
  if old and old.lhs and old.buffer == 0 and not (old.desc or ""):find("^pi%-ide") then
    originals[lhs] = old
    local rhs = old.callback or old.rhs
    vim.keymap.set("i", plug, rhs, { expr = old.expr == 1, remap = old.noremap == 0, silent = old.silent == 1, replace_keycodes = old.expr == 1 and old.replace_keycodes == 1 or nil })
  else
    -- No mapping before: the key itself, not remapped (so it cannot loop back to us).
    vim.keymap.set("i", plug, lhs, { noremap = true })
  end
  return plug
end

--- (Re)maps the configured keys.
function M.apply()
  -- Take ours away and put back what they replaced (a key moved to another lhs, or turned off,
  -- does again what the user mapped it to).
  for lhs in pairs(mapped) do
    pcall(vim.keymap.del, "i", lhs)
    if originals[lhs] then
      pcall(vim.fn.mapset, "i", false, originals[lhs])
    end
  end
  mapped = {}
  local keys = require("pi-ide.core.config").values.suggestion.keys
  for action, a in pairs(M.actions) do
    local plug = a.plug
    local lhs = keys[action]
    if lhs then
      if only_when_shown[action] then
        local fallback = fallback_plug(lhs)
        vim.keymap.set("i", lhs, function()
          return require("pi-ide.features.suggest").visible() and plug or fallback
        end, { expr = true, remap = true, desc = "pi-ide: " .. action:gsub("_", " ") .. " (when a suggestion is shown)" })
      else
        vim.keymap.set("i", lhs, plug, { remap = true, desc = "pi-ide: " .. action:gsub("_", " ") })
      end
      mapped[lhs] = true
    end
  end
end

return M
