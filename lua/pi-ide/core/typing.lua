-- Whether the user is typing. A review (review/show.lua) or Pi's question (chat/dialogs.lua)
-- opening under their fingers would take keystrokes meant for something else: they wait for
-- Normal mode, and, in a terminal (an agent started by :PiIde open or the user's own
-- :terminal), for a quiet keyboard. When a key was typed last is watched while the server runs.
local log = require("pi-ide.core.log")

local M = {}

local ns = vim.api.nvim_create_namespace("pi-ide.core.typing")
local last -- nil: no key yet (uv.now() counts from Neovim's start, so 0 would be recent)

-- Whether that key was typed where the user talks with an agent: a review's pane, a chat, a
-- terminal (an agent's prompt): what the agent sends next is the answer they wait for.
local last_with_agent = false

local function with_agent()
  local b, bo = vim.b, vim.bo
  local chat = b.pi_ide_chat ~= nil or b.pi_ide_chat_agent ~= nil or bo.filetype:sub(1, 11) == "pi-ide-chat"
  return chat or b.pi_ide_review ~= nil or bo.buftype == "terminal"
end

function M.attach()
  vim.on_key(function()
    last = vim.uv.now()
    last_with_agent = with_agent()
  end, ns)
end

function M.detach()
  vim.on_key(nil, ns)
end

--- Whether a key was typed in the last `ms` milliseconds.
function M.within(ms)
  return last ~= nil and vim.uv.now() - last < ms
end

--- Whether the last key was typed in a buffer of the user's own (not a review, a chat or a
--- terminal).
function M.last_key_was_theirs()
  return last ~= nil and not last_with_agent
end

--- In Insert, Visual, Command-line mode... (or Neovim waits for input): not now.
function M.busy_mode()
  local m = vim.api.nvim_get_mode()
  if m.blocking then
    return true
  end
  local c = m.mode:sub(1, 1)
  return not (c == "n" or c == "t") or m.mode:sub(1, 2) == "no"
end

local MODES = { i = "Insert", R = "Replace", v = "Visual", V = "Visual", ["\22"] = "Visual", s = "Select", S = "Select", ["\19"] = "Select", c = "Command-line" }

--- The current mode's name, for messages ("Insert").
function M.mode_name()
  local mode = vim.api.nvim_get_mode().mode
  return MODES[mode:sub(1, 1)] or MODES[mode:sub(1, 2)] or ("'" .. mode .. "'")
end

--- Says that `what` waits until the user leaves the current mode, on one line: a message
--- wider than the command line would stop them at "Press ENTER" and eat their next key.
--- `what` is shortened from the left to fit ("…/src/hello.txt").
function M.say_waiting(what)
  local tail = (" waits until you leave %s mode"):format(M.mode_name())
  local head = "pi-ide.nvim: "
  local room = math.max(vim.v.echospace, 40) - vim.fn.strdisplaywidth(head .. tail) - 1
  if vim.fn.strdisplaywidth(what) > room then
    local chars = vim.fn.strchars(what)
    local keep = math.max(room - 1, 1)
    what = "…" .. vim.fn.strcharpart(what, chars - keep, keep)
    while vim.fn.strdisplaywidth(what) > room and vim.fn.strchars(what) > 2 do
      what = "…" .. vim.fn.strcharpart(what, 2)
    end
  end
  vim.notify(head .. what .. tail, vim.log.levels.INFO)
end

--- Runs `fn` once, when the user is back in Normal mode. Several returns to Normal mode may
--- come before the main loop runs what they scheduled (`<Esc>:w<CR>` typed at once: Visual,
--- then Command-line): `fn` still runs once. `what` names it in the log if it fails.
function M.when_normal(what, fn)
  local id, done
  id = vim.api.nvim_create_autocmd("ModeChanged", {
    pattern = "*:n",
    callback = log.guard(what, function()
      vim.schedule(function()
        if not done and not M.busy_mode() then
          done = true
          pcall(vim.api.nvim_del_autocmd, id)
          fn()
        end
      end)
    end),
  })
end

return M
