-- review.when = "after": an agent's change is answered at once as accepted, its proposal
-- unchanged and never shown, and the write that follows is that agent's pending change, kept or
-- undone in the file's own window (features/pending/). Only where that write is seen: a file in
-- Neovim's current folder, reached through no link. Any other change is reviewed before: never
-- a write unseen.
local log = require("pi-ide.core.log")

local M = {}

--- "before" or "after" for agent `name` (review.when: one for all, or per agent).
function M.when(name)
  local when = require("pi-ide.core.config").values.review.when
  if type(when) == "table" then
    return when[name] or when.default or "before"
  end
  return when
end

--- Whether agent `name`'s change to `path` (its real target `real_path`, `linked` when a link
--- is on the way) is decided after it is written.
function M.applies(name, path, real_path, linked)
  return name ~= nil
    and M.when(name) == "after"
    and not linked
    and require("pi-ide.core.workspace").in_cwd(real_path or path)
end

--- `review_opened` of the file at `path`: when its agent's change is decided after, the review
--- is answered now as accepted with the proposal as sent, and true. Else false: it is shown.
function M.answered(ev, path)
  local agent = require("pi-ide.core.clients").agent_name(ev.client)
  if not M.applies(agent, path, ev.real_path, ev.linked) then
    return false
  end
  local text, why = require("pi-ide.features.review.load").proposal(ev)
  if not text then
    log.info("review %s of %s: the proposal cannot be read (%s): reviewed before", ev.tab_name, path, tostring(why))
    return false
  end
  -- Before the answer: the agent writes as soon as it has it.
  require("pi-ide.features.pending").expect(path, agent)
  local core = require("pi-ide.core.native").get()
  core.staged_loaded(ev.req)
  local sent = core.review_accept(ev.req, text, nil) ~= nil
  log.info("review %s of %s: %s (review.when = \"after\" for %s)", ev.tab_name, path, sent and "accepted at once" or "had ended", agent)
  return true
end

return M
