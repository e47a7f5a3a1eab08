-- A pending change drawn in the file's own window, the way the inline review draws (inline.lua):
-- the buffer shows the file as the agent left it (reloaded when it has no unsaved edits; one
-- that has is never touched), its added lines highlighted, the baseline's removed lines as
-- virtual lines above them. The hunk keys (review.keys) are on the buffer while it is pending,
-- and what the user had on them comes back after.
local config = require("pi-ide.core.config")
local text = require("pi-ide.features.pending.text")

local M = {}

local ns = vim.api.nvim_create_namespace("pi_ide_pending")

vim.api.nvim_set_hl(0, "PiIdePendingRemoved", { link = "DiffDelete", default = true })
vim.api.nvim_set_hl(0, "PiIdePendingAdded", { link = "DiffAdd", default = true })

-- Buffers with keys taken: buf -> { lhs -> the user's buffer map, or false }.
local taken = {}

-- The loaded files' buffers by name and real path, made once per tick: a storm's 200 changes
-- each looked up with buffers.find (a real path resolved per change) took ~24 ms. A change's
-- path is real already (the watch follows no link below the folder's real path).
local by_path = nil

local function buffer_of(path)
  if not by_path then
    by_path = {}
    local buffers = require("pi-ide.core.buffers")
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and buffers.is_file(buf) then
        local name = vim.api.nvim_buf_get_name(buf)
        by_path[name] = by_path[name] or buf
        local real = vim.uv.fs_realpath(name)
        if real then
          by_path[real] = by_path[real] or buf
        end
      end
    end
    vim.schedule(function()
      by_path = nil
    end)
  end
  return by_path[path]
end

-- The baseline's lines of hunk `h`, as virtual lines (tabs expanded: virtual text shows none).
local function removed(base_lines, h, ts)
  local out = {}
  for i = h[1], h[1] + h[2] - 1 do
    local l = (base_lines[i] or ""):gsub("\r?\n$", "")
    l = l:gsub("\t", string.rep(" ", ts))
    table.insert(out, { { l, "PiIdePendingRemoved" } })
  end
  return out
end

-- Lines drawn above the first line show only when the window is scrolled to them (Neovim's
-- "topfill"): a window at the top is scrolled so.
local function reveal_top(buf, n)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_call(win, function()
      if vim.fn.line("w0") == 1 then
        vim.fn.winrestview({ topfill = n })
      end
    end)
  end
end

--- Draws `e` in `buf` (which shows e.text).
local function draw(buf, e)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  if e.not_diffed or e.base == nil or e.text == nil then
    return
  end
  local base_lines, ts = text.lines(e.base), vim.bo[buf].tabstop
  local n = vim.api.nvim_buf_line_count(buf)
  for _, h in ipairs(text.hunks(e.base, e.text)) do
    for l = h[3], h[3] + h[4] - 1 do
      pcall(vim.api.nvim_buf_set_extmark, buf, ns, l - 1, 0, { line_hl_group = "PiIdePendingAdded", priority = 150 })
    end
    if h[2] > 0 then
      -- Above the hunk's first line; a deletion with no line after it, below the last one.
      local at, above = h[4] > 0 and h[3] - 1 or h[3], true
      if at >= n then
        at, above = n - 1, false
      end
      pcall(vim.api.nvim_buf_set_extmark, buf, ns, math.max(at, 0), 0, { virt_lines = removed(base_lines, h, ts), virt_lines_above = above })
      if at == 0 and above then
        reveal_top(buf, h[2])
      end
    end
  end
end

local function actions(path)
  local keys = config.values.review.keys
  local decide = function(a)
    return function()
      require("pi-ide.features.pending.decide").hunk(path, a)
    end
  end
  local move = function(dir)
    return function()
      require("pi-ide.features.pending.decide").move(path, dir, vim.v.count1)
    end
  end
  return {
    { keys.next_hunk, move(1), "next pending hunk" },
    { keys.prev_hunk, move(-1), "previous pending hunk" },
    { keys.accept_hunk, decide("accept"), "keep the agent's hunk" },
    { keys.reject_hunk, decide("reject"), "undo the agent's hunk on disk" },
  }
end

local function take_keys(buf, path)
  if taken[buf] then
    return
  end
  taken[buf] = {}
  for _, a in ipairs(actions(path)) do
    if a[1] then
      local had = vim.api.nvim_buf_call(buf, function()
        return vim.fn.maparg(a[1], "n", false, true)
      end)
      taken[buf][a[1]] = had.buffer == 1 and had or false
      vim.keymap.set("n", a[1], a[2], { buffer = buf, desc = "pi-ide: " .. a[3] })
    end
  end
end

local function give_back(buf)
  local had = taken[buf]
  taken[buf] = nil
  if not (had and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  for lhs, map in pairs(had) do
    pcall(vim.keymap.del, "n", lhs, { buffer = buf })
    if map then
      vim.api.nvim_buf_call(buf, function()
        vim.fn.mapset("n", false, map)
      end)
    end
  end
end

--- Shows entry `e` of `path` wherever its buffer is loaded: reloaded from disk first when it has
--- no unsaved edits and differs (a window that shows the old text is wrong).
function M.show(path, e)
  local buf = buffer_of(path)
  if not buf then
    return
  end
  if vim.bo[buf].modified then
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    return
  end
  local want = e.text and table.concat(text.buffer_lines(e.text), "\n")
  local function stale()
    return want and table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") ~= want
  end
  if stale() then
    require("pi-ide.core.buffers").reload(buf)
    -- checktime saw no change (the same size within the same mtime tick): read it again.
    if stale() then
      vim.api.nvim_buf_call(buf, function()
        vim.cmd("silent! edit!")
      end)
    end
  end
  draw(buf, e)
  take_keys(buf, path)
end

--- `path` is no longer pending: its marks and keys go.
function M.clear(path)
  local buf = buffer_of(path)
  if buf then
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    give_back(buf)
  end
end

--- A buffer loaded later (the user opens the file) shows its pending change too.
function M.attach(group)
  vim.api.nvim_create_autocmd("BufWinEnter", { group = group, callback = function(ev)
    local path = vim.api.nvim_buf_get_name(ev.buf)
    local e = path ~= "" and require("pi-ide.features.pending").entry(path)
    if e then
      M.show(vim.fs.normalize(path), e)
    end
  end })
end

return M
