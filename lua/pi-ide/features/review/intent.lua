-- What a write of the proposal means. Accepting lets the agent write the file, so only a
-- deliberate accept accepts: `:w`, `:w!`, `:x`, `:wq` (and `:up`, `:exit`) typed in the
-- proposal's own window, `ZZ` there, the user's own save key (a mapping to `<Cmd>w<CR>` or
-- `<Cmd>update<CR>`, like LazyVim's <C-s>), the accept key and `:PiIde accept`. Anything else
-- that writes the buffer leaves the review open with a one-line hint: `:wall`, `:xa` or
-- `:wqa` from anywhere, a write issued in another window, an autosave plugin's `:update` or a
-- timer's `:write`. `:w {file}` and `:saveas {file}` write that copy, as Vim would, and the
-- proposal keeps its name.
local config = require("pi-ide.core.config")
local load = require("pi-ide.features.review.load")
local log = require("pi-ide.core.log")

local M = {}

-- The command line entered last, until it has run: { win, line }.
local entered

local tracking
local function track_command_lines()
  if tracking then
    return
  end
  tracking = vim.api.nvim_create_augroup("PiIdeReviewIntent", { clear = true })
  vim.api.nvim_create_autocmd("CmdlineLeave", {
    group = tracking,
    callback = log.guard("noting a command line", function()
      if vim.v.event.cmdtype ~= ":" or vim.v.event.abort then
        return
      end
      entered = { win = vim.api.nvim_get_current_win(), line = vim.fn.getcmdline() }
      -- The command runs before the next turn of the loop.
      vim.schedule(function()
        entered = nil
      end)
    end),
  })
end

-- Commands that write this one buffer.
local WRITES = { write = true, update = true, xit = true, exit = true, wq = true }

local function parsed(line)
  local ok, cmd = pcall(vim.api.nvim_parse_cmd, line, {})
  return ok and cmd or nil
end

-- The write command typed in the proposal's window for the write under way, if it was one.
local function typed_here(r)
  if not entered or entered.win ~= r.ui.right_win then
    return nil
  end
  local cmd = parsed(entered.line)
  return cmd and WRITES[cmd.cmd] and cmd or nil
end

-- Why the write under way is not an accept, in a few words.
local EVERY_BUFFER = { wall = true, wqall = true, xall = true }
local function why_not(r)
  local cmd = entered and parsed(entered.line)
  if cmd and EVERY_BUFFER[cmd.cmd] then
    return (":%s writes every buffer"):format(cmd.cmd)
  elseif cmd and WRITES[cmd.cmd] and entered.win ~= r.ui.right_win then
    return (":%s was typed in another window"):format(cmd.cmd)
  elseif cmd and WRITES[cmd.cmd] then
    return (":%s %s changes what is sent"):format(cmd.cmd, table.concat(cmd.args, " "))
  end
  return "written by a plugin or an autocommand, not by :w in the proposal"
end

-- One line, the words that matter first (a narrow notifier shows only its start).
local function hint(r, why)
  local keys = config.values.review.keys
  vim.notify(
    ("pi-ide.nvim: not accepted: %s. To accept %s: :w in its window%s, or :PiIde accept"):format(
      why,
      vim.fn.fnamemodify(r.path, ":t"),
      keys.accept and (", " .. keys.accept) or ""
    ),
    vim.log.levels.WARN
  )
end

-- ++ff= (or ++fileformat=) is honoured; any other ++option would change what the agent gets
-- behind the user's back (it always receives UTF-8 text).
local function apply_opts(buf, args)
  local ff
  for _, a in ipairs(args) do
    ff = a:match("^%+%+ff=(%a+)$") or a:match("^%+%+fileformat=(%a+)$")
    if not ff then
      return false
    end
  end
  if ff then
    vim.bo[buf].fileformat = ff
  end
  return true
end

-- Writes the proposal (or lines first..last of it) to `path`, as `:w {path}` would.
local function write_copy(r, path, opts)
  local buf = r.ui.right_buf
  if not opts.append and not opts.bang and vim.uv.fs_stat(path) then
    vim.notify(("E13: File exists (add ! to override): %s"):format(path), vim.log.levels.ERROR)
    return
  end
  local text = load.text(buf)
  if opts.first then
    local sep = vim.bo[buf].fileformat == "dos" and "\r\n" or "\n"
    text = table.concat(vim.api.nvim_buf_get_lines(buf, opts.first - 1, opts.last, false), sep) .. sep
  end
  local f, err = io.open(path, opts.append and "ab" or "wb")
  if not f then
    vim.notify(("pi-ide.nvim: cannot write %s: %s"):format(path, tostring(err)), vim.log.levels.ERROR)
    return
  end
  f:write(text)
  f:close()
  local _, lines = text:gsub("\n", "")
  vim.notify(
    ('"%s" %dL, %dB %s (a copy: the review stays open)'):format(
      vim.fn.fnamemodify(path, ":~:."),
      lines,
      #text,
      opts.append and "appended" or "written"
    ),
    vim.log.levels.INFO
  )
end

-- Whether a write goes to the proposal's own name (`:w`), not to a file named (`:w {file}`). The
-- name is a relative one ("a.txt (proposal)", see ui.lua): after a :cd, Neovim expands it against
-- the new directory for the write, so the short name decides, not the full one.
local function to_itself(r, ev)
  local buf = r.ui.right_buf
  return ev.file == vim.fn.bufname(buf) or ev.match == vim.api.nvim_buf_get_name(buf)
end

local function on_write(r, ev, accept)
  if r.copy_to then
    -- The write a :saveas does after renaming (see keep_name).
    local to = r.copy_to
    r.copy_to = nil
    return write_copy(r, to, { bang = true })
  end
  if not to_itself(r, ev) then
    return write_copy(r, ev.match, { bang = vim.v.cmdbang == 1 })
  end
  local cmd = typed_here(r)
  if cmd and apply_opts(r.ui.right_buf, cmd.args) then
    return accept()
  end
  hint(r, why_not(r))
end

-- A part of the proposal (:1,5w {file}), or an append (:w >> {file}): only ever a copy.
local function on_part(r, ev, append)
  if to_itself(r, ev) then
    return hint(r, "a part of the proposal cannot be accepted")
  end
  local first = vim.api.nvim_buf_get_mark(r.ui.right_buf, "[")[1]
  local last = vim.api.nvim_buf_get_mark(r.ui.right_buf, "]")[1]
  write_copy(r, ev.match, { bang = vim.v.cmdbang == 1, append = append, first = first, last = last })
end

-- Wipes the unloaded buffers named `name` (what a rename leaves behind as the alternate file).
local function free_name(name, except)
  local full = vim.fn.fnamemodify(name, ":p")
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local named = vim.fn.bufname(b) == name or vim.api.nvim_buf_get_name(b) == full
    if b ~= except and named and not vim.api.nvim_buf_is_loaded(b) then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
end

-- :saveas and :file rename the buffer: the proposal keeps its name. The write a :saveas does
-- next goes to the new name: a copy.
local function keep_name(r)
  local buf = r.ui.right_buf
  if vim.fn.bufname(buf) == r.ui.right_name then
    return
  end
  local now = vim.api.nvim_buf_get_name(buf)
  free_name(r.ui.right_name, buf)
  pcall(vim.api.nvim_buf_set_name, buf, r.ui.right_name)
  free_name(now, buf)
  local cmd = entered and parsed(entered.line)
  if cmd and cmd.cmd == "saveas" then
    r.copy_to = now
  else
    vim.notify("pi-ide.nvim: the proposal keeps its name (it is not a file; :w {file} writes a copy)", vim.log.levels.WARN)
  end
end

-- The user's own save key: a mapping whose right-hand side writes the current buffer.
local function save_keys()
  local found = {}
  for _, mode in ipairs({ "n", "i", "x", "s" }) do
    for _, m in ipairs(vim.api.nvim_get_keymap(mode)) do
      local cmd = type(m.rhs) == "string" and m.rhs:match("^<[Cc][Mm][Dd]>%s*([%a]+)!?%s*<[Cc][Rr]>")
      if cmd and (cmd == "w" or cmd == "write" or cmd == "up" or cmd == "update") then
        table.insert(found, { mode = mode, lhs = m.lhs })
      end
    end
  end
  return found
end

--- Makes the proposal buffer `r.ui.right_buf` accept only deliberately: `accept()` is called
--- for a deliberate accept. `group`: the review's augroup.
function M.attach(r, group, accept)
  track_command_lines()
  local buf = r.ui.right_buf
  local function on(event, fn)
    vim.api.nvim_create_autocmd(event, {
      group = group,
      buffer = buf,
      callback = log.guard("a write of a review (" .. event .. ")", fn),
    })
  end
  on("BufWriteCmd", function(ev)
    on_write(r, ev, accept)
  end)
  on("FileWriteCmd", function(ev)
    on_part(r, ev, false)
  end)
  on("FileAppendCmd", function(ev)
    on_part(r, ev, true)
  end)
  on("BufFilePost", function()
    keep_name(r)
  end)
  -- :x and :exit do not write an unmodified buffer; typed in the proposal they still accept.
  on("QuitPre", function()
    local cmd = typed_here(r)
    if cmd and (cmd.cmd == "xit" or cmd.cmd == "exit") and not vim.bo[buf].modified then
      accept()
    end
  end)
  vim.keymap.set("n", "ZZ", accept, { buffer = buf, nowait = true, desc = "pi-ide: accept this proposal" })
  for _, k in ipairs(save_keys()) do
    vim.keymap.set(k.mode, k.lhs, function()
      if k.mode == "i" then
        vim.cmd("stopinsert")
      end
      accept()
    end, { buffer = buf, desc = "pi-ide: accept this proposal (your save key)" })
  end
end

return M
