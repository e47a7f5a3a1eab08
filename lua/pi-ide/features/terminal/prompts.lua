-- Enter typed in an agent's terminal of ours (Terminal mode) sends it a prompt: for checkpoints
-- its turn begins there. An agent told not to ask (an "always" answer, an auto-accept mode), or
-- one whose own edits never reach a review, may write without calling Neovim at all: its turn
-- is recorded anyway, so :PiIde changes lists what it wrote and :PiIde undo can take it back.
-- Keys are only looked at (vim.on_key): nothing is mapped in the user's terminal.
--
-- The Enter is held until the turn's checkpoint is taken: an agent may write the moment it reads
-- it, and a snapshot taken after would hold that write as the turn's start (the write would
-- escape its turn). vim.on_key runs before the key is handled, so blocking there (on the worker's
-- result, HOLD_MS at most) holds it and every key typed after it, in order, none lost. Why not a
-- start taken earlier (the last quiet point)? It would hand the new turn the user's own writes
-- made since, which its undo would take back. The hold costs a warm snapshot (BENCHMARKS.md:
-- ~40 ms for 2,000 files, ~150 ms for 20,000); the folder is snapshotted ahead when the terminal
-- opens, so the first prompt's is warm too.
--
-- An Enter while the agent is at work is an answer (to its question, a permission), not a new
-- prompt: one task stays one turn. At work, judged at the line's first key (its echo is no
-- output of the agent's): a review of the agent is open; its terminal printed something in the
-- last OUTPUT_MS (a spinner, streamed output; not the redraw of a terminal just entered, whose
-- size may have changed); or a question is on its screen (one of the last QUESTION_LINES lines
-- that are not blank ends with "?" or offers "[y/n]").
local M = {}

local NS = vim.api.nvim_create_namespace("pi-ide.terminal.prompts")
-- How long an Enter that begins a turn is held for its checkpoint at most (a hung disk must not
-- freeze typing): past it the key goes, and the turn begins when the checkpoint is taken.
local HOLD_MS = 3000
local OUTPUT_MS = 500
local QUESTION_LINES = 2

-- terminal buffer -> { agent, output_at, entered_at (vim.uv.now()), busy = nil | bool (this line's) }
local watched = {}

local function printed_lately(w)
  if not w.output_at or vim.uv.now() - w.output_at >= OUTPUT_MS then
    return false
  end
  return not (w.entered_at and w.output_at - w.entered_at < OUTPUT_MS)
end

-- Whether one of the last QUESTION_LINES lines of `buf`'s screen that are not blank asks.
local function asks(buf)
  local rows = vim.api.nvim_win_get_height(0)
  local seen = 0
  for _, line in ipairs(vim.fn.reverse(vim.api.nvim_buf_get_lines(buf, -rows - 1, -1, false))) do
    -- A TUI's box borders are not text.
    local text = line:gsub("[│┃|%s]+$", "")
    if text:find("%S") then
      if text:find("%?$") or text:lower():find("[%[(]y/n[%])]") then
        return true
      end
      seen = seen + 1
      if seen == QUESTION_LINES then
        return false
      end
    end
  end
  return false
end

local function at_work(w, buf)
  local review = package.loaded["pi-ide.features.review"]
  return printed_lately(w) or (review ~= nil and review.waiting_for(w.agent)) or asks(buf)
end

-- Holds the Enter (and what was typed after it) until job `job`'s checkpoint is taken.
local function hold(job)
  local native = require("pi-ide.core.native").get()
  local t0 = vim.uv.hrtime()
  local taken = native and native.checkpoint_wait(job, HOLD_MS)
  local log = require("pi-ide.core.log")
  log.info("prompt: Enter held %.1f ms for its turn's checkpoint%s", (vim.uv.hrtime() - t0) / 1e6, taken and "" or " (not taken yet: let go)")
end

local function look(key)
  local buf = vim.api.nvim_get_current_buf()
  local w = watched[buf]
  if not w or vim.api.nvim_get_mode().mode ~= "t" then
    return
  end
  -- A control key (<Esc>, <C-c>: the user interrupting the agent) ends what was judged: the
  -- line's next key is judged again (the prompt typed after it is no answer).
  if key ~= "\r" and #key == 1 and key:byte() < 32 then
    w.busy = nil
    return
  end
  if w.busy == nil then
    w.busy = at_work(w, buf)
  end
  if key ~= "\r" then
    return
  end
  local answer = w.busy
  w.busy = nil
  if not answer then
    local job = require("pi-ide.features.checkpoints").prompt_sent(w.agent)
    if job then
      hold(job)
    end
  end
end

local function on_key(key)
  local ok, err = xpcall(look, debug.traceback, key)
  if not ok then
    require("pi-ide.core.log").error("terminal prompt: %s", tostring(err))
  end
end

--- Watches the terminal buffer `buf` of `agent` for prompts, while it exists.
function M.watch(agent, buf)
  local w = { agent = agent }
  watched[buf] = w
  vim.on_key(on_key, NS)
  require("pi-ide.features.checkpoints").warm()
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function()
      w.output_at = vim.uv.now()
    end,
  })
  -- Keys typed before the user left Terminal mode began no line of the next visit.
  vim.api.nvim_create_autocmd("TermEnter", {
    buffer = buf,
    callback = function()
      w.busy, w.entered_at = nil, vim.uv.now()
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      watched[buf] = nil
      if next(watched) == nil then
        vim.on_key(nil, NS)
      end
    end,
  })
end

return M
