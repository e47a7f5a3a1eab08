-- What the benchmarks (bench/) ask of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

-- Stalls of the main loop ------------------------------------------------------------------

--- A timer every millisecond: how late each tick is, is how long the loop was busy. Lateness
--- gathers in _G.__s.gaps (ms).
function M.stall_timer()
  _G.__s = { gaps = {}, last = vim.uv.hrtime() }
  __s.timer = vim.uv.new_timer()
  __s.timer:start(1, 1, function()
    local now = vim.uv.hrtime()
    table.insert(__s.gaps, (now - __s.last) / 1e6 - 1)
    __s.last = now
  end)
end

--- The main thread's CPU time in ns (clock 3: CLOCK_THREAD_CPUTIME_ID on Linux).
local function thread_cpu()
  local ffi = require("ffi")
  pcall(ffi.cdef, "typedef struct { long s; long ns; } pi_bench_ts; int clock_gettime(int, pi_bench_ts *);")
  local ts = ffi.new("pi_bench_ts")
  return function()
    ffi.C.clock_gettime(3, ts)
    return tonumber(ts.s) * 1e9 + tonumber(ts.ns)
  end
end

--- [`stall_timer`], and the main thread's CPU time across the worst gap (_G.__s.worst_cpu, ms),
--- which tells work on it from waiting to be scheduled.
function M.stall_timer_with_cpu()
  local cpu = thread_cpu()
  _G.__s = { gaps = {}, last = vim.uv.hrtime(), cpu = cpu(), worst = 0, worst_cpu = 0 }
  __s.timer = vim.uv.new_timer()
  __s.timer:start(1, 1, function()
    local now, c = vim.uv.hrtime(), cpu()
    local gap = (now - __s.last) / 1e6 - 1
    table.insert(__s.gaps, gap)
    if gap > __s.worst then
      __s.worst, __s.worst_cpu = gap, (c - __s.cpu) / 1e6
    end
    __s.last, __s.cpu = now, c
  end)
end

-- The chat -----------------------------------------------------------------------------------

--- The pure-Lua way to read Pi, for comparison: `fake` run with jobstart, every line decoded
--- and every delta drawn on the main loop, into a window of its own. _G.__p counts: busy (ns),
--- n (deltas), draws, done; __p.job is Pi's job.
function M.pure_lua_chat(fake, deltas, rate)
  vim.cmd("botright vnew")
  local buf = vim.api.nvim_get_current_buf()
  vim.cmd("wincmd t")
  _G.__p = { busy = 0, n = 0, draws = 0, done = false }
  local partial = ""
  local function on_line(line)
    local ok, ev = pcall(vim.json.decode, line)
    if not ok or type(ev) ~= "table" then
      return
    end
    local d = ev.type == "message_update" and ev.assistantMessageEvent
    if d and d.type == "text_delta" then
      local parts = vim.split(d.delta, "\n", { plain = true })
      local row = vim.api.nvim_buf_line_count(buf) - 1
      local col = #vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
      vim.api.nvim_buf_set_text(buf, row, col, row, col, parts)
      __p.n = __p.n + 1
      __p.draws = __p.draws + 1
    elseif ev.type == "agent_settled" then
      __p.done = true
    end
  end
  __p.job = vim.fn.jobstart({ fake, "--deltas", deltas, "--rate", rate }, {
    on_stdout = function(_, data)
      local t0 = vim.uv.hrtime()
      data[1] = partial .. data[1]
      partial = table.remove(data)
      for _, l in ipairs(data) do
        on_line(l)
      end
      __p.busy = __p.busy + (vim.uv.hrtime() - t0)
    end,
  })
end

-- Checkpoints ------------------------------------------------------------------------------

--- Runs `:PiIde changes`; _G.__c.t0 is when, __c.t1 when PiIdeChanges fired, __c.n the
--- quickfix list's size then.
function M.time_changes()
  _G.__c = { t0 = 0, t1 = 0, n = 0 }
  vim.api.nvim_create_autocmd("User", {
    pattern = "PiIdeChanges",
    once = true,
    callback = function()
      __c.t1, __c.n = vim.uv.hrtime(), vim.fn.getqflist({ size = 0 }).size
    end,
  })
  __c.t0 = vim.uv.hrtime()
  vim.cmd("PiIde changes")
end

-- The cursor and reviews -------------------------------------------------------------------

--- `n` cursor moves in the current buffer (200 lines or more), each CursorMoved's cost to our
--- autocmds timed (µs); then the selection read once the cursor is still, 200 times. Returns
--- { median, p99 of the moves, median of the reads }.
function M.time_cursor_moved(n)
  local t = {}
  local hr = vim.uv.hrtime
  for i = 1, n do
    vim.api.nvim_win_set_cursor(0, { (i % 200) + 1, i % 30 })
    local t0 = hr()
    vim.api.nvim_exec_autocmds("CursorMoved", { group = "PiIdeSelection" })
    t[i] = (hr() - t0) / 1000
  end
  table.sort(t)
  local sel = require("pi-ide.features.selection")
  local f = {}
  for i = 1, 200 do
    vim.api.nvim_win_set_cursor(0, { (i % 200) + 1, 3 })
    local t0 = hr()
    sel.flush()
    f[i] = (hr() - t0) / 1000
  end
  table.sort(f)
  return { t[math.floor(n / 2)], t[math.floor(n * 0.99)], f[100] }
end

--- A timer every 2 ms keeping the longest gap in _G.__b.max (ns), and when the last review
--- opened in __b.opened.
function M.review_timer()
  _G.__b = { max = 0, last = vim.uv.hrtime(), opened = 0 }
  __b.timer = vim.uv.new_timer()
  __b.timer:start(0, 2, function()
    local now = vim.uv.hrtime()
    if now - __b.last > __b.max then
      __b.max = now - __b.last
    end
    __b.last = now
  end)
  vim.api.nvim_create_autocmd("User", {
    pattern = "PiIdeReviewOpened",
    callback = function()
      __b.opened = vim.uv.hrtime()
    end,
  })
end

--- The review's floor: Neovim opens `path` in a tab, fills a second buffer with `proposal`'s
--- lines and runs diffthis on both; first with the lines read before the clock starts, then
--- split from the text. Returns { ms with lines, ms of the diff step, ms from the text }.
function M.review_floor(path, proposal)
  local lines = vim.fn.readfile(proposal)
  local text = table.concat(lines, "\n") .. "\n"
  local out = {}
  for _, from_string in ipairs({ false, true }) do
    local t0 = vim.uv.hrtime()
    vim.cmd("tabedit " .. vim.fn.fnameescape(path))
    vim.cmd("diffthis")
    vim.cmd("rightbelow vnew")
    vim.api.nvim_buf_set_lines(0, 0, -1, false, from_string and vim.split(text, "\n", { plain = true }) or lines)
    local t1 = vim.uv.hrtime()
    vim.cmd("diffthis")
    table.insert(out, (vim.uv.hrtime() - t0) / 1e6)
    if not from_string then
      table.insert(out, (vim.uv.hrtime() - t1) / 1e6)
    end
    vim.cmd("bwipeout! | tabclose! | bwipeout! " .. vim.fn.bufnr(path))
  end
  return out
end

--- Decides a hunk in the middle of the open review from its proposal's window, `samples` times
--- each: `:PiIde hunk reject`, then `:PiIde hunk accept`, timed with the TextChanged it causes
--- and the redraw. `total`: as the user has it, Neovim's own update of the diff included;
--- `ours`: the same with diff mode off (the plugin's part); `rediff`: :diffupdate alone, what
--- any change of the proposal costs (a typed character too). Returns { hunks, total, ours,
--- rediff } in ms.
function M.decide_hunk(samples)
  local r = require("pi-ide.features.review").current()
  local hunks = require("pi-ide.features.review.hunks")
  vim.api.nvim_set_current_win(r.ui.right_win)
  local h = r.hunks.list[math.floor(#r.hunks.list / 2)]
  local out = { hunks = #r.hunks.list, total = {}, ours = {}, rediff = {} }
  local function decide(action)
    vim.api.nvim_win_set_cursor(0, { hunks.row_of(r, r.ui.right_buf, h) + 1, 0 })
    vim.cmd("redraw")
    local t0 = vim.uv.hrtime()
    vim.cmd("PiIde hunk " .. action)
    vim.api.nvim_exec_autocmds("TextChanged", { buffer = r.ui.right_buf })
    vim.cmd("redraw")
    return (vim.uv.hrtime() - t0) / 1e6
  end
  local function both(diff, into)
    for _, w in ipairs({ r.ui.left_win, r.ui.right_win }) do
      vim.wo[w].diff = diff
    end
    for _ = 1, samples do
      table.insert(into, decide("reject"))
      table.insert(into, decide("accept"))
    end
  end
  both(true, out.total)
  both(false, out.ours)
  both(true, {})
  for _ = 1, samples do
    local t0 = vim.uv.hrtime()
    vim.cmd("diffupdate")
    table.insert(out.rediff, (vim.uv.hrtime() - t0) / 1e6)
  end
  return out
end

-- Pending changes --------------------------------------------------------------------------

--- Watches what the workspace's watch (features/pending/) answers, before it starts: _G.__w.ready
--- is when it was set up (hrtime; -1: it failed, __w.error says why), __w.batches each batch
--- it handed over ({ landed, more, ms: the main thread's time handling it }), __w.events when
--- each PiIdeChangePending fired.
function M.pending_probe()
  _G.__w = { ready = 0, batches = {}, events = {} }
  local checkpoints = require("pi-ide.features.checkpoints")
  local stream = checkpoints.stream
  checkpoints.stream = function(job, cb)
    return stream(job, function(ok, r)
      local t0 = vim.uv.hrtime()
      cb(ok, r)
      local t1 = vim.uv.hrtime()
      if not ok then
        __w.ready, __w.error = -1, tostring(r)
      elseif type(r) == "table" and r.watch then
        __w.ready = t1
      elseif type(r) == "table" then
        table.insert(__w.batches, { landed = #(r.landed or {}), more = r.more or 0, ms = (t1 - t0) / 1e6 })
      end
    end)
  end
  vim.api.nvim_create_autocmd("User", {
    pattern = "PiIdeChangePending",
    callback = function()
      table.insert(__w.events, vim.uv.hrtime())
    end,
  })
end

--- Counts the main loop's turns (a prepare handle runs once before each wait for events) in
--- _G.__l.n until `loop_turns` stops it and returns the count.
function M.count_loop_turns()
  _G.__l = { n = 0, h = vim.uv.new_prepare() }
  __l.h:start(function()
    __l.n = __l.n + 1
  end)
end

function M.loop_turns()
  __l.h:stop()
  __l.h:close()
  return __l.n
end

local function sorted_ms(t)
  table.sort(t)
  return { p50 = t[math.max(1, math.floor(#t * 0.5))], p99 = t[math.max(1, math.floor(#t * 0.99))] }
end

--- Draws a pending change of `path` (open in the current window, holding `text`) against `base`
--- `n` times: the view alone (view.show) and the whole of a change arriving (pending.changed:
--- counted, drawn, stored, told). Returns { show = { p50, p99 }, changed = { p50, p99 }, hunks }
--- in ms.
function M.time_pending_draw(path, base, text, n)
  local pending = require("pi-ide.features.pending")
  local view = require("pi-ide.features.pending.view")
  local e = { agent = "bench", kind = "changed", base = base, text = text, base_blob = "a", blob = "b" }
  pending.changed(path, e) -- the buffer reloaded once, as when it lands
  local show, changed = {}, {}
  for i = 1, n do
    local t0 = vim.uv.hrtime()
    view.show(path, e)
    local t1 = vim.uv.hrtime()
    pending.changed(path, e)
    show[i], changed[i] = (t1 - t0) / 1e6, (vim.uv.hrtime() - t1) / 1e6
  end
  return { show = sorted_ms(show), changed = sorted_ms(changed), hunks = e.hunks }
end

return M
