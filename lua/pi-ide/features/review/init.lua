-- Reviews as the user sees them: the two-pane diff every file an agent wants to write passes
-- through. The core owns each review (src/state/reviews/): it stages the proposal, keeps it
-- until it is answered, and answers the agent exactly once. This is its view: it shows a review
-- when the core hands it over (`review_opened`), reports the user's decision (a deliberate
-- accept, intent.lua: `:w` in the proposal's window, the accept key, :PiIde accept; anything
-- else that takes the proposal away is a rejection), and takes a review away when the core
-- ended it (`review_ended`: its agent closed it, its client left).
--
-- Beside it: show.lua (building the panes in turns of the loop), load.lua (bytes in and out),
-- intent.lua (what a write of the proposal means), ui.lua (windows and buffers), winbar.lua,
-- reload.lua (buffers follow the agent's write), hunks.lua and hunk_keys.lua (deciding a hunk),
-- declined.lua (what an agent is told of the hunks not kept), stale.lua (a file that changed
-- on disk meanwhile), inline.lua (review.layout = "inline": the review drawn in the file's own
-- window), after.lua (review.when = "after": answered at once, decided once written).
local log = require("pi-ide.core.log")
local ui = require("pi-ide.features.review.ui")
local winbar = require("pi-ide.features.review.winbar")

local M = {}

-- What is shown, by the core's number for the review; `order` is oldest first ("2 of 3").
local views = {} -- req -> view
local order = {} -- reqs

local fire = require("pi-ide.core.events").fire

-- User PiIdeReviewOpened and PiIdeReviewClosed (`what`: "Opened", "Closed"); the names they had,
-- PiIdeDiffOpened and PiIdeDiffClosed, fire too until the next release.
local function review_event(what, data)
  fire("PiIdeReview" .. what, data)
  fire("PiIdeDiff" .. what, data)
end

local display_name = winbar.display_name

local function native()
  return require("pi-ide.core.native").get()
end

local function in_order()
  return vim.tbl_map(function(req)
    return views[req]
  end, order)
end

local function refresh_winbars()
  winbar.refresh(in_order())
end

local function forget(r)
  views[r.req] = nil
  for i, req in ipairs(order) do
    if req == r.req then
      table.remove(order, i)
      break
    end
  end
end

--- The view of a review that ended: PiIdeReviewClosed, then the windows go on the next turn of
--- the loop (it may be ending from inside one of its own autocmds). result: "accepted",
--- "rejected" or "abandoned"; `blob`: the git blob id of the text accepted (what the file must
--- hold once the agent has written it); `old_blob`: that of the file its left pane showed (the
--- all-zeros id: there was none).
local function ended(r, result, blob, old_blob)
  if r.ended then
    return
  end
  r.ended = true
  forget(r)
  -- The inline view goes at once (Neovim may be quitting: the user's winbar must be back).
  require("pi-ide.features.review.inline").close(r)
  log.info("review %s of %s: %s", r.tab_name, r.path, result)
  review_event("Closed", { tab_name = r.tab_name, path = r.path, result = result, blob = blob, old_blob = old_blob })
  vim.schedule(function()
    -- Windows entered on the way are no one's move into another review.
    require("pi-ide.features.review.arming").plugin_moves(function()
      ui.close(r)
    end)
    refresh_winbars()
  end)
end

--- The user's decision goes to the core, which answers the agent (`note`: what an agent that
--- writes its own proposal is told of the hunks not kept). An accept the core refuses (the
--- review had ended meanwhile) is said to be lost.
local function decide(r, accepted, text, note)
  if r.ended then
    return
  end
  local core = native()
  if not accepted then
    if core then
      core.review_reject(r.req)
    end
    return ended(r, "rejected")
  end
  local blob, old_blob
  if core then
    blob, old_blob = core.review_accept(r.req, text, note)
  end
  if blob then
    require("pi-ide.features.review.reload").when_written(r.path)
    return ended(r, "accepted", blob, old_blob)
  end
  log.notify(("the agent's call for %s had ended: your accept was not sent"):format(display_name(r.path)), vim.log.levels.WARN)
  ended(r, "abandoned")
end

--- Accepts the review: the proposal's text as the user left it goes to the agent. A text that
--- is not valid UTF-8 (bytes pasted from elsewhere) cannot be sent: the user is told where, and
--- the review stays open.
function M.accept(r)
  if not (r.ui and vim.api.nvim_buf_is_valid(r.ui.right_buf)) or r.ended then
    return
  end
  local load = require("pi-ide.features.review.load")
  local text = load.text(r.ui.right_buf)
  local bad = load.invalid_utf8(text)
  if bad then
    log.notify(
      ("the proposal for %s is not valid UTF-8 (%s): fix it, or reject the review"):format(display_name(r.path), bad),
      vim.log.levels.ERROR
    )
    return
  end
  -- Every hunk rejected: the proposal is the file again, nothing of it is accepted.
  local accepted = not require("pi-ide.features.review.hunks").all_rejected(r)
  if accepted and require("pi-ide.features.review.stale").refuses(r) then
    return refresh_winbars()
  end
  vim.bo[r.ui.right_buf].modified = false
  -- Agents whose accepted text does not reach them in the answer (they write their own, or
  -- we write it for them) are told this.
  local note = require("pi-ide.features.review.declined").note(r)
  decide(r, accepted, text, note)
end

function M.reject(r)
  decide(r, false)
end

--- Showing it failed, at its start (core/server.lua) or later (show.lua): without a review on
--- screen the only safe answer is a rejection (an unanswered review would hold the agent; an
--- error would let its write through). `r` is its view, or { req, path } when there is none.
function M.failed(r, err)
  r = views[r.req] or r
  local core = native()
  if core and not core.review_reject(r.req) then
    -- The core had ended it meanwhile (its client gave up; its staged files went with it), which
    -- is why showing it failed: no error to show; what was built goes.
    log.info("review %s of %s ended while being shown: %s", tostring(r.tab_name), tostring(r.path), tostring(err))
    return views[r.req] and ended(r, "abandoned")
  end
  -- One line on screen (a traceback would stop Neovim at a more-prompt); all of it in the log.
  local first = tostring(err):match("^[^\n]*")
  log.info("cannot show the review of %s: %s", tostring(r.path), tostring(err))
  log.notify(("cannot show the review of %s: %s"):format(display_name(tostring(r.path)), first), vim.log.levels.ERROR)
  if views[r.req] or r.ended then
    ended(r, "rejected")
  end
end

--- `review_opened`: the core hands over a review to show (src/state/events.rs, ReviewOpened);
--- show.lua builds its panes, in turns of the loop. One its agent's review.when decides after
--- is answered at once instead (after.lua). When this fails, the server calls failed().
function M.open(ev)
  local buffers = require("pi-ide.core.buffers")
  local path = buffers.to_path(ev.path)
  if require("pi-ide.features.review.after").answered(ev, path) then
    return
  end
  local user_buf = buffers.find(path)
  local r = {
    req = ev.req,
    client = ev.client,
    tab_name = ev.tab_name,
    path = path,
    old_path = buffers.to_path(ev.old_path),
    -- The agent writes its own proposal; the text accepted is then set over it (by the core).
    agent_writes = ev.agent_writes,
    writer = ev.agent_writes and (require("pi-ide.core.clients").kind_of(ev.client) or {}).short or nil,
    proposal_file = ev.proposal_file,
    old = ev.old,
    new = ev.new,
    format_changes = ev.format_changes,
    -- Where the file really is, through its links, as the core staged it: what the review judges
    -- (outside the workspace?) and what an accept checks it still leads to (stale.lua).
    real_path = ev.real_path,
    linked = ev.linked,
    new_file = not ev.old.exists,
    old_error = ev.old.error,
    user_edits = user_buf ~= nil and vim.api.nvim_buf_is_loaded(user_buf) and vim.bo[user_buf].modified,
    stats = nil, -- counted by the core meanwhile: `review_stats`
    shown = false, -- both panes are up and in diff mode: the user can decide it now
  }
  views[r.req] = r
  table.insert(order, r.req)
  require("pi-ide.features.review.carry").take(r)
  require("pi-ide.features.review.stale").note(r)
  require("pi-ide.features.review.show").when_ready(r, M)
end

--- `review_stats`: the core's count of the changes (after the review was handed over).
function M.set_stats(req, stats)
  local r = views[req]
  if r then
    r.stats = stats
    if r.proposal_bufs then
      require("pi-ide.features.review.hunks").track(r, unpack(r.proposal_bufs))
    end
    -- The inline view waits for the hunks (show.lua).
    local when_counted = r.when_counted
    r.when_counted = nil
    if when_counted then
      when_counted()
    end
    refresh_winbars()
  end
end

--- `review_ended`: the core ended a review (its agent closed it, its client left or gave up
--- waiting). `reason`: why, when the agent did not simply go.
function M.ended_by_core(ev)
  local r = views[ev.req]
  if not r then
    return
  end
  if ev.result == "closed" then
    -- Its agent closed it with the text the user left in it (the core knew it): the agent
    -- writes it if the user said yes in its terminal (maybe already), and the user's buffer
    -- shows it then.
    require("pi-ide.features.review.reload").maybe_written(r.path)
    require("pi-ide.features.review.ignored").closed(r)
    return ended(r, "rejected")
  end
  if ev.result == "abandoned" then
    local msg = ev.reason
        and ("the review of %s was rejected: %s"):format(display_name(r.path), ev.reason)
      or ("the agent disconnected; the review of %s was closed"):format(display_name(r.path))
    log.notify(msg, vim.log.levels.WARN)
  elseif ev.result == "rejected" then
    -- Ended by its agent, maybe to send it again: what the user decided there is held.
    require("pi-ide.features.review.carry").hold(r)
  end
  ended(r, ev.result)
end

--- Both panes are up and in diff mode (show.lua).
function M.shown(r)
  r.shown = true
  refresh_winbars()
  review_event("Opened", { tab_name = r.tab_name, path = r.path })
end

--- Redraws the winbars (an agent named its session; a window was resized).
function M.refresh()
  refresh_winbars()
end

--- The text the user left in review `r` (their edits, the hunks they declined), when it is on
--- screen and valid UTF-8; else nil.
local function text_left(r)
  if not (r and r.shown and r.ui and vim.api.nvim_buf_is_valid(r.ui.right_buf)) then
    return nil
  end
  local load = require("pi-ide.features.review.load")
  local text = load.text(r.ui.right_buf)
  return not load.invalid_utf8(text) and text or nil
end

--- Tool handler (tools/init.lua): the agent closes its review `args.tab` because the user
--- answered it elsewhere (in the agent's terminal), while the user is typing in it (else the
--- core answers from what left.lua pushed). The core closes it; the answer is the text the user
--- left in it, which the agent then writes if that answer was yes (nil: its own).
function M.closeReview(args, reply, ev)
  local core = native()
  local req = core and core.review_close(ev.client, tostring(args.tab))
  local r = req and views[req]
  local text = text_left(r)
  if r then
    if text then
      -- A yes there: the agent writes it, and the user's buffer shows it then.
      require("pi-ide.features.review.reload").when_written(r.path)
    end
    require("pi-ide.features.review.ignored").closed(r)
    ended(r, "rejected")
  end
  reply(text or vim.NIL)
end

--- Rejects every review of `client` (the chat aborts its Pi's turn: Pi cannot stop while a
--- review waits), those not shown yet included.
function M.reject_of_client(client)
  local core = native()
  for _, req in ipairs(core and core.reject_reviews_of(client) or {}) do
    if views[req] then
      ended(views[req], "rejected")
    end
  end
end

--- The review the user is in (a pane of it is current, or its tab is, or the file it is shown
--- inline in), if any.
function M.current()
  local buf = vim.api.nvim_get_current_buf()
  local tab = vim.api.nvim_get_current_tabpage()
  for _, r in ipairs(in_order()) do
    local inline_buf = r.ui and r.ui.inline and r.ui.inline.buf
    if r.ui and (r.ui.left_buf == buf or r.ui.right_buf == buf or r.ui.tab == tab or inline_buf == buf) then
      return r
    end
  end
end

--- For the statusline: how many reviews are on screen (the user can decide them now), and how
--- many are still waiting to be shown (being built, or held while the user is in Insert mode).
--- The third: how many of those on screen opened without the focus and wait for the user to
--- go to them (:PiIde review).
function M.count()
  local shown, unvisited = 0, 0
  for _, r in ipairs(in_order()) do
    shown = shown + (r.shown and 1 or 0)
    unvisited = unvisited + (r.shown and r.quiet and 1 or 0)
  end
  return shown, #order - shown, unvisited
end

--- Whether the review the user is in takes a typed accept now (review/arming.lua).
function M.armed()
  local r = M.current()
  return r ~= nil and require("pi-ide.features.review.arming").armed(r)
end

--- Open reviews, oldest first: { tab_name, path }.
function M.list()
  return vim.tbl_map(function(r)
    return { tab_name = r.tab_name, path = r.path }
  end, in_order())
end

--- Whether a review of agent `name` (lua/pi-ide/agents/) is open: the agent waits for the user.
function M.waiting_for(name)
  local clients = require("pi-ide.core.clients")
  for _, r in ipairs(in_order()) do
    if (clients.kind_of(r.client) or {}).name == name then
      return true
    end
  end
  return false
end

--- Stopping or quitting: every open review is rejected, before any socket closes.
function M.reject_all()
  for _, r in ipairs(in_order()) do
    decide(r, false)
  end
end

--- :PiIde status's line and the open reviews'.
function M.status_lines()
  local lines = { ("  open reviews: %d"):format(#order) }
  for _, r in ipairs(M.list()) do
    table.insert(lines, ("    %s  %s"):format(r.tab_name, vim.fn.fnamemodify(r.path, ":~:.")))
  end
  local _, _, unvisited = M.count()
  if unvisited > 0 then
    table.insert(lines, ("    %d opened while you typed: :PiIde review goes to it"):format(unvisited))
  end
  return lines
end

-- The review :PiIde review goes to: the oldest on screen that the user has not been to, else
-- the oldest on screen.
local function to_visit()
  local first
  for _, r in ipairs(in_order()) do
    if r.shown and r.quiet then
      return r
    end
    first = first or (r.shown and r or nil)
  end
  return first
end

-- :PiIde review: the user goes to a review (one that opened without the focus); their own
-- move, so a typed accept counts there at once. A review still waiting opens with the focus.
local function go_to_review()
  local r = to_visit()
  if not r then
    for _, waiting in ipairs(in_order()) do
      waiting.asked = true
    end
    local msg = #order > 0 and "the review opens when you are back in Normal mode" or "no review is open"
    return vim.notify("pi-ide.nvim: " .. msg, vim.log.levels.INFO)
  end
  if r.ui.inline then
    local win = vim.fn.bufwinid(r.ui.inline.buf)
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
    end
  else
    if r.ui.tab and vim.api.nvim_tabpage_is_valid(r.ui.tab) then
      vim.api.nvim_set_current_tabpage(r.ui.tab)
    end
    if vim.api.nvim_win_is_valid(r.ui.right_win) then
      vim.api.nvim_set_current_win(r.ui.right_win)
    end
  end
  require("pi-ide.features.review.arming").came(r, true)
  refresh_winbars()
end

-- :PiIde accept / reject act on the review the user is in.
-- The pending change (features/pending/) of the file in the current window, if it is one.
local function pending_here()
  local path = vim.api.nvim_buf_get_name(0)
  return path ~= "" and require("pi-ide.features.pending").entry(path) and vim.fs.normalize(path) or nil
end

local function in_review(action)
  local r = M.current()
  if r then
    M[action](r)
  elseif pending_here() then
    require("pi-ide.features.pending.decide").file(pending_here(), action)
  else
    vim.notify(("pi-ide.nvim: not in a review (open reviews: %d)"):format(#M.list()), vim.log.levels.WARN)
  end
end

-- :PiIde hunk accept|reject: the hunk under the cursor of the review the user is in.
-- :PiIde hunk next|prev: the keys' moves, for a user whose keys are taken (gitsigns' ]h in
-- the file of an inline review) or who maps their own.
local STEP = { next = 1, prev = -1 }

local function hunk(opts)
  local action = opts.fargs[2]
  if action ~= "accept" and action ~= "reject" and not STEP[action] then
    return vim.notify("pi-ide.nvim: :PiIde hunk accept|reject|next|prev", vim.log.levels.ERROR)
  end
  local r = M.current()
  -- The :PiIde changes view takes a file's hunk back to its checkpoint (features/checkpoints).
  local changes = require("pi-ide.features.checkpoints.hunks")
  if not r and changes.here() and STEP[action] then
    return changes.move(STEP[action], 1)
  elseif not r and changes.here() then
    return changes.decide(action)
  elseif not r and pending_here() and STEP[action] then
    return require("pi-ide.features.pending.decide").move(pending_here(), STEP[action], 1)
  elseif not r and pending_here() then
    return require("pi-ide.features.pending.decide").hunk(pending_here(), action)
  elseif not r then
    return vim.notify(("pi-ide.nvim: not in a review (open reviews: %d)"):format(#M.list()), vim.log.levels.WARN)
  end
  local keys = require("pi-ide.features.review.hunk_keys")
  if STEP[action] then
    return keys.move(r, STEP[action], 1)
  end
  keys.decide(r, action, M)
end

-- :PiIde panes: the inline review the user is in goes to two panes (to edit the proposal).
local function panes()
  local r = M.current()
  if not (r and r.ui and r.ui.inline) then
    return vim.notify("pi-ide.nvim: not in an inline review", vim.log.levels.WARN)
  end
  r.asked = true
  r.ui.inline.moved("you asked for them")
end

--- Its :PiIde subcommands (core/commands.lua).
M.commands = {
  accept = { run = function() in_review("accept") end },
  reject = { run = function() in_review("reject") end },
  panes = { run = panes },
  review = { run = go_to_review },
  hunk = { run = hunk, complete = require("pi-ide.core.commands").first_of({ "accept", "reject", "next", "prev" }) },
}

return M
