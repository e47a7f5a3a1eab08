-- openDiff, close_tab, closeAllDiffTabs: the agent's side of reviews. The review itself (panes,
-- keys, accepting with :w) is lua/pi-ide/diff/.
local M = {}

-- Answered later, when the user decides (through `reply`).
function M.openDiff(args, reply, ev)
  require("pi-ide.diff").open(args, reply, ev)
end

-- Each client closes its own reviews only.
function M.close_tab(args, _, ev)
  require("pi-ide.diff").close(args.tab_name, ev.client)
  return "TAB_CLOSED"
end

function M.closeAllDiffTabs(_, _, ev)
  return ("CLOSED_%d_DIFF_TABS"):format(require("pi-ide.diff").close_all(ev.client))
end

return M
