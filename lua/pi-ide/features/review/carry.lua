-- An agent that sends a review of the same name again (its client's tab name) takes the place
-- of the one on screen: the core ends the old one, then opens the new. What the user decided
-- there must not vanish silently, nor must `:w` then accept a hunk they had rejected: each
-- hunk of the new proposal that is the same change as one they had rejected or edited (the
-- same file lines, the same proposed lines) gets that decision again, and one line says how
-- many were kept and how many hunks changed.
local hunks = require("pi-ide.features.review.hunks")

local M = {}

-- The decisions of a review that was taken over, by its client and name, until the next
-- review of that name opens (within HOLD_MS): { path, at, edited, list = { { file, proposal,
-- state, lines } } }.
local held = {}
local HOLD_MS = 60 * 1000

local function key(client, tab_name)
  return tostring(client) .. "\0" .. tostring(tab_name)
end

--- Review `r` was ended by the core (not by the user): its hunk decisions are held for a
--- review of the same name that may follow at once.
function M.hold(r)
  local h = r.hunks
  if not (h and vim.api.nvim_buf_is_valid(h.buf)) then
    return
  end
  local list = {}
  for _, hunk in ipairs(h.list) do
    local state = hunks.state(h, hunk)
    if state ~= "kept" then
      table.insert(list, { file = hunk.file, proposal = hunk.proposal, state = state, lines = hunks.lines(h, hunk) })
    end
  end
  -- Typed over elsewhere than in a hunk (or before the hunks were counted): cannot be carried.
  local edited = #list == 0 and vim.api.nvim_buf_get_changedtick(h.buf) ~= r.proposal_tick
  if #list > 0 or edited then
    held[key(r.client, r.tab_name)] = { path = r.path, at = vim.uv.hrtime(), list = list, edited = edited }
  end
end

--- Review `r` opens: it takes the decisions held for its name, if any (the file must be the
--- same one).
function M.take(r)
  local k = key(r.client, r.tab_name)
  local was = held[k]
  held[k] = nil
  if was and was.path == r.path and (vim.uv.hrtime() - was.at) / 1e6 < HOLD_MS then
    r.carried = was
  end
end

local function same_change(a, b)
  return vim.deep_equal(a.file, b.file) and vim.deep_equal(a.proposal, b.proposal)
end

-- Puts decision `d` on hunk `h` of review `r`: true when it could.
local function apply(r, h, d)
  if d.state == "rejected" then
    return hunks.set(r, h, "rejected") == nil
  end
  return hunks.replace(r, h, d.lines)
end

--- Review `r`'s hunks are counted: the decisions it carried go on the hunks that did not
--- change, and the user is told (one line: never a hit-enter prompt).
-- The hunk of `list` that decision `d` goes on: the first same change not taken yet (`used`),
-- in the order of the file (an agent may make one change in two places).
local function match(list, d, used)
  for _, h in ipairs(list) do
    if not used[h] and same_change(d, h) then
      return h
    end
  end
end

function M.apply(r)
  local carried = r.carried
  r.carried = nil
  if not (carried and r.hunks) then
    return
  end
  local kept, used = 0, {}
  for _, d in ipairs(carried.list) do
    local h = match(r.hunks.list, d, used)
    if h then
      used[h] = true
      kept = kept + (apply(r, h, d) and 1 or 0)
    end
  end
  hunks.show(r)
  require("pi-ide.features.review.left").push(r)
  local name = vim.fn.fnamemodify(r.path, ":t")
  if carried.edited then
    return vim.notify(("pi-ide.nvim: %s sent again: your edits of it are gone"):format(name), vim.log.levels.WARN)
  end
  local lost = #carried.list - kept
  local msg = ("pi-ide.nvim: %s sent again: %d decision%s kept"):format(name, kept, kept == 1 and "" or "s")
  if lost > 0 then
    -- One line at 80 columns (a longer one stops the user at Press ENTER).
    local full = msg .. (", %d lost (hunk changed)"):format(lost)
    msg = vim.fn.strdisplaywidth(full) < vim.v.echospace and full or msg .. (", %d lost"):format(lost)
  end
  vim.notify(msg, lost > 0 and vim.log.levels.WARN or vim.log.levels.INFO)
end

return M
