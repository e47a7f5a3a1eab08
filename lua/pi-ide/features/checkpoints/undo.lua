-- :PiIde undo[!]: puts back every file the last turn changed as it was at its start (deleted
-- files come back, created ones go), after a confirmation that lists them (! skips it). A file
-- changed since the turn ended (by you, or after it), or that you wrote in Neovim while it was
-- under way, is yours: put back only if you type its name. The chat that ran the turn gets its
-- prompt back in its prompt area.
local checkpoints = require("pi-ide.features.checkpoints")

local M = {}

local ACTION = { restore = "put back", delete = "delete (created by the turn)" }

-- Changed since the turn: the worker says so, or Neovim knows (the user's write since the turn
-- began, under way or after its end: an open turn has no end yet, and what they wrote is
-- theirs; or a buffer with unsaved edits).
local function changed_since(turn, f, folder)
  local wrote = checkpoints.written(f.path)
  local buf = require("pi-ide.core.buffers").find(folder .. "/" .. f.path)
  local unsaved = buf and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified
  return f.changed_since or unsaved or (wrote and wrote >= turn.started_ms)
end

-- The files to put back: those changed since the turn only when the user types their name.
local function chosen(turn, files, folder)
  local out, refused = {}, {}
  for _, f in ipairs(files) do
    if changed_since(turn, f, folder) then
      local typed = vim.fn.input(("%s changed since turn %d; type its name to put it back anyway: "):format(f.path, turn.n))
      if typed == f.path then
        table.insert(out, f.path)
      else
        table.insert(refused, f.path)
      end
    else
      table.insert(out, f.path)
    end
  end
  return out, refused
end

-- What an undo leaves as it is: files that run code or hold secrets (fingerprinted, not
-- recorded) and files left out of the turn's checkpoint (over the size cap).
local function left_alone(plan)
  local out = {}
  for _, p in ipairs(plan.guarded or {}) do
    table.insert(out, ("%s (runs code or holds secrets: not recorded, look at it yourself)"):format(p))
  end
  for _, p in ipairs(plan.kept or {}) do
    table.insert(out, ("%s (not in the turn's checkpoint: over the size cap)"):format(p))
  end
  return out
end

local function confirmed(plan)
  local turn = plan.turn
  local lines = { ("Undo turn %d (%s)?"):format(turn.n, turn.agent) }
  for _, f in ipairs(plan.files) do
    table.insert(lines, ("  %s %s"):format(ACTION[f.action], f.path))
  end
  for _, l in ipairs(left_alone(plan)) do
    table.insert(lines, "  not undone: " .. l)
  end
  return vim.fn.confirm(table.concat(lines, "\n"), "&Undo\n&Cancel", 2) == 1
end

local function give_prompt_back(turn)
  local front = package.loaded["pi-ide.features.chat.front"]
  if turn.prompt and front then
    pcall(front.call, "set_prompt", turn.agent, turn.prompt)
  end
end

local function report(plan, r, refused)
  local turn = plan.turn
  local parts = { ("undid turn %d (%s)"):format(turn.n, turn.agent) }
  if #r.restored > 0 then
    table.insert(parts, "put back " .. table.concat(r.restored, ", "))
  end
  if #r.deleted > 0 then
    table.insert(parts, "deleted " .. table.concat(r.deleted, ", "))
  end
  if #refused > 0 then
    table.insert(parts, "left as they are " .. table.concat(refused, ", "))
  end
  for _, f in ipairs(r.failed) do
    table.insert(parts, ("could not put back %s: %s"):format(f.path, f.error))
  end
  local alone = left_alone(plan)
  if #alone > 0 then
    table.insert(parts, "not undone " .. table.concat(alone, ", "))
  end
  local level = #r.failed > 0 and vim.log.levels.ERROR or #alone > 0 and vim.log.levels.WARN or vim.log.levels.INFO
  vim.notify("pi-ide.nvim: " .. table.concat(parts, "; "), level)
end

--- :PiIde undo[!].
function M.run(bang)
  local busy = checkpoints.chat_turn()
  if busy then
    local msg = "pi-ide.nvim: %s's turn is under way: :PiIde abort it (or let it finish) before :PiIde undo"
    return vim.notify(msg:format(busy.agent), vim.log.levels.WARN)
  end
  local folder = checkpoints.folder()
  checkpoints.run({ op = "plan", folder = folder }, function(ok, plan)
    if not ok then
      return vim.notify("pi-ide.nvim: " .. tostring(plan), vim.log.levels.ERROR)
    end
    local turn = plan.turn
    if #plan.files == 0 then
      local alone = left_alone(plan)
      local msg = ("pi-ide.nvim: turn %d (%s) changed nothing that is not back already"):format(turn.n, turn.agent)
      if #alone > 0 then
        return vim.notify(msg .. " and an undo can put back; not undone " .. table.concat(alone, ", "), vim.log.levels.WARN)
      end
      return vim.notify(msg, vim.log.levels.INFO)
    end
    if not bang and not confirmed(plan) then
      return
    end
    local paths, refused = chosen(turn, plan.files, folder)
    if #paths == 0 then
      return vim.notify("pi-ide.nvim: nothing put back (" .. table.concat(refused, ", ") .. " left as they are)", vim.log.levels.WARN)
    end
    checkpoints.run({ op = "undo", n = turn.n, paths = paths, folder = folder }, function(done, r)
      if not done then
        return vim.notify("pi-ide.nvim: " .. tostring(r), vim.log.levels.ERROR)
      end
      checkpoints.reload(folder, vim.list_extend(vim.list_extend({}, r.restored), r.deleted))
      checkpoints.seen()
      give_prompt_back(turn)
      report(plan, r, refused)
      require("pi-ide.core.events").fire("PiIdeUndone", { turn = turn.n, restored = r.restored, deleted = r.deleted })
    end)
  end)
end

return M
