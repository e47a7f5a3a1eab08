-- openDiff, close_tab, closeAllDiffTabs: the agent's side of reviews. The review itself (panes,
-- keys, accepting with :w) is lua/pi-ide/diff/.
local M = {}

-- Answered later, when the user decides (through `reply`).
function M.openDiff(args, reply, ev)
  require("pi-ide.diff").open(args, reply, ev)
end

-- Each client closes its own reviews only. Copilot's close_diff (the user answered in the
-- terminal) asks for a report: whether a review was open.
function M.close_tab(args, _, ev)
  local trigger = args.report and "closed_via_tool" or nil
  local closed = require("pi-ide.diff").close(args.tab_name, ev.client, trigger, args.opening == true)
  if args.report then
    return { "TAB_CLOSED", closed and "closed" or "already_closed", args.tab_name }
  end
  return "TAB_CLOSED"
end

function M.closeAllDiffTabs(_, _, ev)
  return ("CLOSED_%d_DIFF_TABS"):format(require("pi-ide.diff").close_all(ev.client))
end

return M
