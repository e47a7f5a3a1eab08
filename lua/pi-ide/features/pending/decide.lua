-- Deciding a pending change (init.lua) the way a review is decided: a hunk kept makes the
-- baseline take it; a hunk undone puts the baseline's lines back in that hunk only, on disk,
-- through the checkpoints' safe write (no link followed), which refuses a file that changed
-- since it was shown (a later write of the agent's or the user's is never overwritten: shown
-- again, to decide again). A buffer with unsaved edits is never written under: said, not done.
local pending = require("pi-ide.features.pending")
local checkpoints = require("pi-ide.features.checkpoints")
local text = require("pi-ide.features.pending.text")

local M = {}

local function say(msg, level)
  vim.notify("pi-ide.nvim: " .. msg, level or vim.log.levels.INFO)
end

local function short(path)
  return vim.fn.fnamemodify(path, ":~:.")
end

-- The hunk at line `l` of the file: the one whose lines hold it, else one with no lines there.
local function at(hunks, l)
  local near
  for _, h in ipairs(hunks) do
    if h[4] > 0 and l >= h[3] and l < h[3] + h[4] then
      return h
    elseif h[4] == 0 and (l == h[3] or l == h[3] + 1) then
      near = near or h
    end
  end
  return near
end

local function unsaved(path)
  local buf = require("pi-ide.core.buffers").find(path)
  return buf and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified
end

-- Writes `bytes` (nil: removes the file) over what the entry last saw, then `done()`.
-- A buffer with unsaved edits is never written under: said, and true.
local function held_by_edits(path)
  if unsaved(path) then
    say(("%s has unsaved edits: write or undo them first (nothing decided)"):format(short(path)), vim.log.levels.WARN)
    return true
  end
end

local function write(path, e, bytes, done)
  if held_by_edits(path) then
    return
  end
  local rel = checkpoints.relative(path)
  if not rel then
    return say(("%s is outside the workspace: not written"):format(short(path)), vim.log.levels.ERROR)
  end
  -- A link swapped in has no blob: the core expects it still to be a link ("link").
  local expected = e.blob or (e.not_diffed == "a symlink" and "link" or nil)
  checkpoints.run({ op = "put", path = rel, bytes = bytes, expected = expected }, function(ok, err)
    if not ok then
      return say(("%s: nothing undone (%s); its change is shown again"):format(short(path), tostring(err):gsub("^.-: ", "")), vim.log.levels.WARN)
    end
    local native = require("pi-ide.core.native").get()
    local blob = bytes and native and native.blob_of_file(path, 64 * 1024 * 1024) or nil
    pending.own(path, blob)
    done(blob)
  end)
end

--- :PiIde hunk accept|reject (and the keys) in the window of pending file `path`.
function M.hunk(path, action)
  local e = pending.entry(path)
  if not e or held_by_edits(path) then
    return
  elseif e.not_diffed or e.text == nil or e.base == nil then
    return say(("%s: %s, decided as a whole: :PiIde accept or :PiIde reject"):format(short(path), e.not_diffed or e.kind))
  end
  local h = at(text.hunks(e.base, e.text), vim.fn.line("."))
  if not h then
    local key = require("pi-ide.core.config").values.review.keys.next_hunk or "]h"
    return say(("no pending hunk under the cursor (%s goes to the next one)"):format(key))
  end
  if action == "accept" then
    e.base, e.base_blob = text.apply(e.base, e.text, h, "a"), nil
    return pending.changed(path, e, true)
  end
  local undone = text.apply(e.base, e.text, h, "b")
  write(path, e, undone, function(blob)
    e.text, e.blob = undone, blob
    pending.changed(path, e, true)
  end)
end

--- :PiIde accept|reject in the window of pending file `path`: the whole file kept or undone
--- (an undone creation deletes the file, an undone deletion puts it back).
function M.file(path, action)
  local e = pending.entry(path)
  if not e then
    return
  elseif action == "accept" then
    pending.forget(path, e.text or false, e.blob)
    return say(("kept %s's change of %s"):format(e.agent, short(path)))
  elseif e.base == nil and e.kind ~= "created" then
    return say(("%s: its text before is not known (%s): nothing undone"):format(short(path), e.not_diffed or "no snapshot"), vim.log.levels.WARN)
  end
  local bytes = e.kind ~= "created" and e.base or nil
  write(path, e, bytes, function(blob)
    pending.forget(path, bytes or false, blob)
    local buf = require("pi-ide.core.buffers").find(path)
    if buf and vim.api.nvim_buf_is_loaded(buf) and bytes then
      require("pi-ide.core.buffers").reload(buf)
    end
    say(("undid %s's change of %s"):format(e.agent, short(path)))
  end)
end

--- ]h / [h in a pending file.
function M.move(path, dir, count)
  local e = pending.entry(path)
  local hunks = e and e.base and e.text and text.hunks(e.base, e.text) or {}
  local lines = vim.tbl_map(function(h)
    return math.max(1, h[3])
  end, hunks)
  require("pi-ide.features.review.hunk_keys").go(lines, dir, count)
end

--- Every pending file kept (`action` "accept") or undone ("reject"): :PiIde changes keep|undo.
function M.all(action)
  local list = pending.list()
  if #list == 0 then
    return say("no pending changes")
  end
  for _, p in ipairs(list) do
    M.file(p.path, action)
  end
end

return M
