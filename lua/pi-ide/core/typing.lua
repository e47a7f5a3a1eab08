-- Whether the user is typing. A review (review/show.lua) or Pi's question (chat/dialogs.lua)
-- opening under their fingers would take keystrokes meant for something else: they wait for
-- Normal mode, and, in a terminal (an agent started by :PiIde open or the user's own
-- :terminal), for a quiet keyboard. When a key was typed last is watched while the server runs.
local log = require("pi-ide.core.log")

local M = {}

local ns = vim.api.nvim_create_namespace("pi-ide.core.typing")
local last -- nil: no key yet

--- Now, in milliseconds, from the clock itself (vim.uv.now() is the loop's, cached: it stands
--- still through a batch of scheduled work, such as a review being built).
function M.now()
  return vim.uv.hrtime() / 1e6
end

-- Whether that key was typed where the user talks with an agent: a chat, or the terminal of
-- an agent :PiIde open started (its prompt): what the agent sends next is the answer they wait
-- for. A review's pane, their own shell and their files are theirs.
local last_with_agent = false

local function with_agent()
  local b = vim.b
  return b.pi_ide_chat ~= nil or b.pi_ide_chat_agent ~= nil or b.pi_ide_agent ~= nil or vim.bo.filetype:sub(1, 11) == "pi-ide-chat"
end

-- The buffer it was typed in, when that was a review's pane.
local last_review_buf

function M.attach()
  vim.on_key(function()
    last = M.now()
    last_with_agent = with_agent()
    last_review_buf = vim.b.pi_ide_review ~= nil and vim.api.nvim_get_current_buf() or nil
  end, ns)
end

function M.detach()
  vim.on_key(nil, ns)
end

--- Whether a key was typed in the last `ms` milliseconds.
function M.within(ms)
  return last ~= nil and M.now() - last < ms
end

--- Whether the last key was typed in a buffer of the user's own (not a chat, nor the terminal
--- of an agent :PiIde open started).
---
--- A key typed in a review that has ended since (its :w accepted it) was aimed at that one, not
--- at anything open now.
function M.last_key_was_theirs()
  local in_ended_review = last_review_buf ~= nil and not vim.api.nvim_buf_is_valid(last_review_buf)
  return last ~= nil and not last_with_agent and not in_ended_review
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
