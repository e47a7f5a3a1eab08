-- Inline completions from the agent, shown as ghost text while typing.
--
-- One request at most is in flight; a newer trigger cancels it (request_cancelled on the wire)
-- and so does anything that takes its context away (leaving Insert mode, another buffer or
-- window, the cursor moving off its anchor). An answer is only shown if it still fits: same
-- buffer, window and line, and whatever was typed since is a prefix of it (typeahead). Typing
-- what the ghost text shows consumes it without a new request or a redraw of anything else.
local config = require("pi-ide.core.config")
local ghost = require("pi-ide.features.suggest.ghost")
local overlap = require("pi-ide.features.suggest.overlap")
local log = require("pi-ide.core.log")
local requests = require("pi-ide.core.requests")

local M = {}

local hr = vim.uv.hrtime

local state = {
  enabled = nil, -- global auto-trigger (nil: from config)
  model = nil, -- "provider/id" chosen with :PiIde model
  timer = nil, -- the debounce timer
  inflight = nil, -- { req, buf, win, anchor, manual, t_key, t_sent }
  shown = nil, -- { buf, win, anchor, items, index, t }
  key_time = nil, -- when the keystroke that led to the pending trigger happened
}

local stats = { requests = 0, cancelled = 0, shown = 0, accepted = 0, errors = 0 }

-- The latencies of the last SAMPLES suggestions shown, per part, in rings of plain numbers (a
-- table per sample would hold ~100 KiB of Lua memory for as long as Neovim runs).
local SAMPLES = 500
local PARTS = { "total", "debounce", "agent", "render" }
local samples = { n = 0, next = 1, total = {}, debounce = {}, agent = {}, render = {} }

-- Callbacks waiting for the answer to the request in flight (or about to be sent), e.g. the
-- blink.cmp source: each runs once, when the answer was handled or the request ended.
local waiters = {}

local function notify_waiters()
  if next(waiters) == nil then
    return
  end
  local list = waiters
  waiters = {}
  for _, cb in pairs(list) do
    local ok, err = xpcall(cb, debug.traceback)
    if not ok then
      log.error("a suggestion listener failed: %s", tostring(err))
    end
  end
end

local function cfg()
  return config.values.suggestion
end

local user_event = require("pi-ide.core.events").fire

local function auto_enabled(buf)
  local b = vim.b[buf].pi_ide_suggest
  if b ~= nil then
    return b
  end
  if state.enabled ~= nil then
    return state.enabled
  end
  return cfg().auto_trigger
end

--- Whether suggestions may be asked for in this buffer at all (manual triggers too).
function M.allowed(buf)
  if not require("pi-ide.core.buffers").is_file(buf) then
    return false, "not a file buffer"
  end
  local ft = vim.bo[buf].filetype
  local fts = cfg().filetypes
  local on = fts[ft]
  if on == nil then
    on = fts["*"] ~= false
  end
  if not on then
    return false, ("suggestions are off for filetype '%s'"):format(ft)
  end
  local size = vim.api.nvim_buf_get_offset(buf, vim.api.nvim_buf_line_count(buf))
  if size > cfg().max_file_bytes then
    return false, ("the buffer is larger than %d bytes"):format(cfg().max_file_bytes)
  end
  return true
end

local in_insert_mode = require("pi-ide.features.suggest.events").in_insert_mode

-- A completion menu (the built-in one, nvim-cmp's or blink.cmp's) hides the ghost text.
local function menu_visible()
  if vim.fn.pumvisible() == 1 then
    return true
  end
  local cmp = package.loaded["cmp"]
  if cmp and type(cmp.visible) == "function" then
    local ok, v = pcall(cmp.visible)
    if ok and v then
      return true
    end
  end
  local blink = package.loaded["blink.cmp"]
  if blink then
    local f = blink.is_menu_visible or blink.is_visible
    if type(f) == "function" then
      local ok, v = pcall(f)
      if ok and v then
        return true
      end
    end
  end
  return false
end

-- What was typed since the anchor, if the cursor is still where the anchor's text continues.
local function typed_since(anchor, buf, win)
  if vim.api.nvim_get_current_win() ~= win or vim.api.nvim_win_get_buf(win) ~= buf then
    return nil
  end
  local cursor = vim.api.nvim_win_get_cursor(win)
  if cursor[1] - 1 ~= anchor.row then
    return nil
  end
  local line = vim.api.nvim_get_current_line()
  local prefix, suffix = line:sub(1, cursor[2]), line:sub(cursor[2] + 1)
  if #prefix < #anchor.prefix or prefix:sub(1, #anchor.prefix) ~= anchor.prefix or suffix ~= anchor.suffix then
    return nil
  end
  return prefix:sub(#anchor.prefix + 1)
end

-- The part of a suggestion still to show after `typed`, or nil if it does not fit.
local function remainder(item, typed)
  if item:sub(1, #typed) ~= typed then
    return nil
  end
  local rest = item:sub(#typed + 1)
  return rest ~= "" and rest or nil
end

-- Draws the shown suggestion. Returns true when drawn, "hidden" when it still fits but a
-- completion menu is open (it comes back when the menu closes), false when it no longer fits.
local function render()
  local s = state.shown
  if not s then
    ghost.clear()
    return false
  end
  local typed = typed_since(s.anchor, s.buf, s.win)
  if not typed then
    ghost.clear()
    return false
  end
  if cfg().hide_during_completion and menu_visible() then
    ghost.clear()
    return remainder(s.items[s.index], typed) and "hidden" or false
  end
  local text = remainder(s.items[s.index], typed)
  if not text then
    -- Typing left this alternative; another may still fit.
    for i, item in ipairs(s.items) do
      if remainder(item, typed) then
        s.index, text = i, remainder(item, typed)
        break
      end
    end
  end
  if not text then
    ghost.clear()
    return false
  end
  ghost.draw(s.win, s.anchor.row, #s.anchor.prefix + #typed, s.anchor.prefix .. typed, text, s.index, #s.items)
  return true
end

local function stop_timer()
  if state.timer then
    state.timer:stop()
  end
end

local function cancel_inflight()
  if state.inflight then
    requests.cancel(state.inflight.req)
    stats.cancelled = stats.cancelled + 1
    state.inflight = nil
  end
  notify_waiters()
end

--- Takes everything away: ghost text, pending trigger, request in flight.
function M.clear()
  stop_timer()
  cancel_inflight()
  state.shown = nil
  ghost.clear()
end

--- Whether a suggestion is visible now (what <Tab> and friends look at).
function M.visible()
  return state.shown ~= nil and render() == true
end

local function record_sample(f)
  if not f.t_key then
    return
  end
  local now, i = hr(), samples.next
  samples.debounce[i] = (f.t_sent - f.t_key) / 1e6
  samples.agent[i] = (f.t_answer - f.t_sent) / 1e6
  samples.render[i] = (now - f.t_answer) / 1e6
  samples.total[i] = (now - f.t_key) / 1e6
  samples.next = i % SAMPLES + 1
  samples.n = math.min(samples.n + 1, SAMPLES)
end

local show_answer

local function on_answer(f, result, err)
  if state.inflight ~= f then
    return -- superseded or cancelled: a stale answer is never shown
  end
  state.inflight = nil
  show_answer(f, result, err)
  notify_waiters()
end

show_answer = function(f, result, err)
  f.t_answer = hr()
  if err then
    stats.errors = stats.errors + 1
    if f.manual then
      log.notify(("no suggestion: %s"):format(err.message or "error"), vim.log.levels.WARN)
    else
      log.debug("getSuggestions failed: %s (%s)", tostring(err.message), tostring(err.code))
    end
    return
  end
  local items = {}
  for _, s in ipairs(type(result) == "table" and type(result.suggestions) == "table" and result.suggestions or {}) do
    if type(s) == "string" and s ~= "" then
      table.insert(items, overlap.trim(s, f.anchor.suffix, f.anchor.next_line))
    end
  end
  if #items == 0 then
    if f.manual then
      vim.notify("pi-ide.nvim: the agent has no suggestion here", vim.log.levels.INFO)
    end
    return
  end
  if not in_insert_mode() then
    return
  end
  state.shown = { buf = f.buf, win = f.win, anchor = f.anchor, items = items, index = 1 }
  local drawn = render()
  if not drawn then
    state.shown = nil
  elseif drawn == true then
    stats.shown = stats.shown + 1
    record_sample(f)
    user_event("PiIdeSuggestionShown", { count = #items, manual = f.manual })
  end
end

--- Asks the agent now (manual = true: report problems instead of staying quiet).
function M.trigger(manual)
  stop_timer()
  -- Suggestions are shown (and taken) in Insert mode; from Normal mode the answer would have
  -- nowhere to go. (<C-o>:PiIde suggest from Insert mode is fine: that mode is "niI".)
  if manual and vim.api.nvim_get_mode().mode == "n" then
    vim.notify(
      "pi-ide.nvim: suggestions are shown in Insert mode: start typing there, or press the trigger key (<M-\\> by default)",
      vim.log.levels.INFO
    )
    return
  end
  local buf, win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
  local ok, why = M.allowed(buf)
  if not ok then
    if manual then
      vim.notify("pi-ide.nvim: " .. why, vim.log.levels.WARN)
    end
    notify_waiters()
    return
  end
  -- Nothing typed since the request in flight (an event that changed nothing: a completion
  -- menu redrawn, an auto-pair's cursor move): its answer is the one wanted; asking again
  -- would only cost the agent a second call and drop the first answer.
  local f0 = state.inflight
  if not manual and f0 and typed_since(f0.anchor, f0.buf, f0.win) == "" then
    return
  end
  -- The waiters want the answer to the request sent now, not the end of the old one.
  local waiting = waiters
  waiters = {}
  cancel_inflight()
  waiters = waiting
  local c = cfg()
  local params, anchor = require("pi-ide.features.suggest.context").build(buf, win, c)
  params.model = state.model or c.model
  local f = { buf = buf, win = win, anchor = anchor, manual = manual, t_key = state.key_time or hr() }
  local req, err = requests.send("getSuggestions", params, c.timeout_ms, function(result, e)
    on_answer(f, result, e)
  end)
  if not req then
    if manual then
      log.notify(err, vim.log.levels.WARN)
    end
    notify_waiters()
    return
  end
  f.req, f.t_sent = req, hr()
  state.inflight = f
  state.key_time = nil
  stats.requests = stats.requests + 1
  user_event("PiIdeSuggestionRequested", { manual = manual })
end

local function schedule_trigger()
  if not state.timer then
    state.timer = vim.uv.new_timer()
  end
  state.key_time = state.key_time or hr()
  state.timer:stop()
  state.timer:start(
    cfg().debounce_ms,
    0,
    vim.schedule_wrap(function()
      if in_insert_mode() and auto_enabled(vim.api.nvim_get_current_buf()) then
        M.trigger(false)
      else
        notify_waiters()
      end
    end)
  )
end

-- Text changed or the cursor moved in Insert mode: keep what still fits, else start over.
local function on_change()
  if state.shown then
    if render() then
      return -- typeahead (or hidden under a menu): no request
    end
    state.shown = nil
  end
  if state.inflight and not typed_since(state.inflight.anchor, state.inflight.buf, state.inflight.win) then
    cancel_inflight()
  end
  local buf = vim.api.nvim_get_current_buf()
  if auto_enabled(buf) and M.allowed(buf) then
    schedule_trigger()
  end
end

local function on_cursor_moved()
  -- Typing moves the cursor too; only a move that left the suggestion's line/prefix clears it.
  if state.shown and not render() then
    state.shown = nil
  end
  if state.inflight and not typed_since(state.inflight.anchor, state.inflight.buf, state.inflight.win) then
    cancel_inflight()
    stop_timer()
  end
end

--- Accepts the whole suggestion, its next word, or the rest of its line. One undo step each;
--- the cursor ends after the inserted text; what is left stays shown.
function M.accept(kind)
  if not M.visible() then
    return false
  end
  local s = state.shown
  local typed = typed_since(s.anchor, s.buf, s.win)
  local rest = remainder(s.items[s.index], typed)
  local piece = rest
  if kind == "word" then
    piece = vim.fn.matchstr(rest, [=[^\_s*\%(\k\+\|[^[:space:]]\)]=])
  elseif kind == "line" then
    local nl = rest:find("\n", 1, true)
    piece = nl == 1 and rest:match("^\n[^\n]*") or (nl and rest:sub(1, nl - 1) or rest)
  end
  if piece == "" then
    piece = rest
  end
  local buf, win = s.buf, s.win
  local row, col = s.anchor.row, #s.anchor.prefix + #typed
  local lines = vim.split(piece, "\n", { plain = true })
  -- Setting 'undolevels' to itself closes the undo block: the accept is its own step.
  vim.bo[buf].undolevels = vim.bo[buf].undolevels
  vim.api.nvim_buf_set_text(buf, row, col, row, col, lines)
  vim.bo[buf].undolevels = vim.bo[buf].undolevels
  local new_row = row + #lines - 1
  local new_col = (#lines == 1 and col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(win, { new_row + 1, new_col })
  stats.accepted = stats.accepted + 1
  user_event("PiIdeSuggestionAccepted", { kind = kind, text = piece })
  -- Keep what is left of the alternatives that agree with what was accepted.
  local accepted = typed .. piece
  local left = {}
  for _, item in ipairs(s.items) do
    local r = remainder(item, accepted)
    if r then
      table.insert(left, r)
    end
  end
  ghost.clear()
  state.shown = nil
  if #left > 0 then
    local line = vim.api.nvim_buf_get_lines(buf, new_row, new_row + 1, false)[1] or ""
    state.shown = {
      buf = buf,
      win = win,
      anchor = { row = new_row, prefix = line:sub(1, new_col), suffix = line:sub(new_col + 1) },
      items = left,
      index = 1,
    }
    render()
  end
  return true
end

--- Shows the next (step = 1) or previous (-1) alternative; asks for suggestions if none.
function M.cycle(step)
  local s = state.shown
  if not s or #s.items < 2 then
    if not s then
      M.trigger(true)
    end
    return
  end
  s.index = (s.index - 1 + step) % #s.items + 1
  render()
end

--- A request is in flight (for the statusline).
function M.busy()
  return state.inflight ~= nil
end

--- Whether an answer is on its way: a request in flight, or one about to be sent (typing).
function M.pending()
  return state.inflight ~= nil or (state.timer ~= nil and state.timer:is_active())
end

--- The shown suggestion if it fits the cursor now, even while hidden under a completion menu:
--- { texts = { what each alternative would still insert }, index = the one shown }.
function M.current()
  local s = state.shown
  if not s then
    return nil
  end
  local typed = typed_since(s.anchor, s.buf, s.win)
  if not typed then
    return nil
  end
  local texts, index = {}, 1
  for i, item in ipairs(s.items) do
    local rest = remainder(item, typed)
    if rest then
      table.insert(texts, rest)
      if i == s.index then
        index = #texts
      end
    end
  end
  return #texts > 0 and { texts = texts, index = index } or nil
end

--- Runs `cb()` once the answer on its way has been handled (or the request ended). Returns a
--- function that forgets `cb`.
function M.when_answered(cb)
  local key = {}
  waiters[key] = cb
  return function()
    waiters[key] = nil
  end
end

--- A suggestion was inserted by someone else (the blink.cmp source): count it, and let go of
--- the ghost text it came from.
function M.accepted_elsewhere(text)
  stats.accepted = stats.accepted + 1
  state.shown = nil
  ghost.clear()
  user_event("PiIdeSuggestionAccepted", { kind = "all", text = text })
end

function M.dismiss()
  local had = state.shown ~= nil or state.inflight ~= nil
  M.clear()
  return had
end

--- :PiIde toggle [buffer]: auto-trigger off/on, everywhere or for this buffer.
function M.toggle(scope)
  local buf = vim.api.nvim_get_current_buf()
  if scope == "buffer" then
    vim.b[buf].pi_ide_suggest = not auto_enabled(buf)
    vim.notify(
      ("pi-ide.nvim: suggestions while typing %s in this buffer"):format(vim.b[buf].pi_ide_suggest and "on" or "off"),
      vim.log.levels.INFO
    )
  else
    state.enabled = not (state.enabled == nil and cfg().auto_trigger or state.enabled)
    vim.notify(("pi-ide.nvim: suggestions while typing %s"):format(state.enabled and "on" or "off"), vim.log.levels.INFO)
  end
  if not auto_enabled(buf) then
    M.clear()
  end
end

function M.set_model(model)
  state.model = model
end

function M.model()
  return state.model or cfg().model
end

local function percentile(values, p)
  if #values == 0 then
    return nil
  end
  table.sort(values)
  return values[math.max(1, math.ceil(#values * p))]
end

--- Numbers for :PiIde stats.
function M.stats()
  local out = vim.deepcopy(stats)
  out.accept_rate = stats.shown > 0 and stats.accepted / stats.shown or nil
  for _, part in ipairs(PARTS) do
    local v = { unpack(samples[part], 1, samples.n) }
    out[part] = { p50 = percentile(v, 0.5), p95 = percentile(v, 0.95), n = #v }
  end
  return out
end

-- Entry points for the autocmds (suggest/events.lua registers them without loading this file
-- until the first keystroke in Insert mode).

--- TextChangedI.
function M.on_text_changed()
  state.key_time = hr()
  on_change()
end

M.on_cursor_moved = on_cursor_moved

--- A completion menu opened or closed: draw (or hide) on the next turn.
function M.render_later()
  vim.schedule(render)
end

-- :PiIde stats: the numbers, and where the time of a suggestion goes.
local function show_stats()
  local s = M.stats()
  local function ms(part)
    local v = s[part]
    return v.n > 0 and ("p50 %.0f ms, p95 %.0f ms"):format(v.p50, v.p95) or "no samples yet"
  end
  local rate = s.accept_rate and (" (%.0f%%)"):format(s.accept_rate * 100) or ""
  local lines = {
    ("pi-ide.nvim suggestions: %d requested, %d cancelled, %d shown, %d accepted%s, %d errors"):format(
      s.requests, s.cancelled, s.shown, s.accepted, rate, s.errors),
    "  keystroke -> ghost text: " .. ms("total"),
    "    debounce: " .. ms("debounce"),
    "    agent:    " .. ms("agent"),
    "    render:   " .. ms("render"),
    "  model: " .. (M.model() or "the agent's default"),
  }
  vim.api.nvim_echo({ { table.concat(lines, "\n") } }, false, {})
end

--- Its :PiIde subcommands (core/commands.lua).
M.commands = {
  suggest = { run = function() M.trigger(true) end },
  toggle = {
    run = function(opts)
      M.toggle(opts.fargs[2])
    end,
    complete = function(arglead, n)
      return require("pi-ide.core.commands").first_of({ "buffer" })(arglead, n)
    end,
  },
  stats = { run = show_stats },
}

return M
