-- A file that changed on disk while its review was open. The review shows the text the file
-- had, and its rejected hunks put that text back: accepting now would bring back lines the file
-- no longer has, without the user seeing them. So an accept is refused (the review stays open;
-- :PiIde reject rejects it, and the agent can ask again with the file as it is), and deciding a
-- hunk says so as soon as it is seen. Exact: the core's blob of the file as it read it
-- (`review_stats`: old_blob) against the file now; a hunk's decision only looks at the file's
-- stat (cheap), and at its blob once that changed (a touch that left the text is no change).
local M = {}

-- The file's stat, for a cheap look: kind, size, modification time, inode.
local function stamp(path)
  local st = vim.uv.fs_stat(path) -- through a link, as the core reads it
  return st and table.concat({ st.type, st.size, st.mtime.sec, st.mtime.nsec, st.ino }, ":") or "none"
end

-- Where the path leads now when it is a link: its target, or what it names (dangling).
local function link_now(path)
  local st = vim.uv.fs_lstat(path)
  return st and st.type == "link" and (vim.uv.fs_realpath(path) or vim.uv.fs_readlink(path)) or nil
end

--- Notes the file's stat as the review opens (right after the core read it), and where it
--- leads if it is a link.
function M.note(r)
  r.disk_stamp = stamp(r.path)
  r.link_at_open = link_now(r.path)
end

-- The file is no longer the text the review shows (nil: cannot tell; its text was unreadable).
-- A link put there since (where there was none, or a plain file, or one leading elsewhere) is
-- a change even when it leads to the same text: a write would land in another file than the
-- one the review judged (r.real_path, the core's).
local function changed(r)
  r.link_now = link_now(r.path)
  if r.old_error then
    return nil
  elseif not r.old.exists then
    -- A dangling link it opened on is no change while it leads to the same nothing.
    local same_link = r.link_now ~= nil and r.link_now == r.link_at_open and vim.uv.fs_stat(r.path) == nil
    return vim.uv.fs_lstat(r.path) ~= nil and not same_link
  elseif r.real_path and vim.uv.fs_realpath(r.path) ~= r.real_path then
    return true
  end
  local native = require("pi-ide.core.native").get()
  local blob, size = r.stats and r.stats.old_blob, r.stats and r.stats.old_size
  if not (native and blob and size) then
    return stamp(r.path) ~= r.disk_stamp -- the core's count has not arrived yet
  end
  -- Another size is another text: only a file of the same size is read (at most that size,
  -- on the main thread: it is the size of the file the review shows).
  local st = vim.uv.fs_stat(r.path)
  if not (st and st.type == "file" and st.size == size) then
    return true
  end
  return native.blob_of_file(r.path, size) ~= blob
end

--- Looks again, cheaply, at the file of review `r`; true once it changed on disk (said in the
--- winbar from then on: r.disk_changed).
function M.look(r)
  local now = stamp(r.path)
  if not r.disk_changed and now ~= r.disk_stamp then
    r.disk_changed = changed(r)
    r.disk_stamp = now
  end
  return r.disk_changed
end

--- Why review `r` cannot be accepted, and what to do: the words that matter first (a narrow
--- notifier shows only its start; the log has it all).
function M.message(r)
  local name = vim.fn.fnamemodify(r.path, ":~:.")
  if r.link_now and r.link_now ~= r.real_path then
    return ("%s changed on disk since this review opened: it is a link to %s now; :q rejects it"):format(
      name,
      vim.fn.fnamemodify(r.link_now, ":~:.")
    )
  end
  return ("%s changed on disk since this review opened: :q rejects it"):format(name)
end

-- Why, for the log: what an accept would do.
local function why(r)
  if r.link_now and r.link_now ~= r.real_path then
    return "a write would land in the file it leads to"
  end
  return "accepting would put back what it no longer has; the agent can ask again"
end

--- An accept of review `r` is refused when its file changed on disk: said, and true. On one
--- line on screen (a longer one stops the user at "Press ENTER", as right after their own :w).
function M.refuses(r)
  r.disk_changed = r.disk_changed or changed(r)
  if r.disk_changed then
    local log = require("pi-ide.core.log")
    log.info("%s (%s)", M.message(r), why(r))
    vim.notify("pi-ide.nvim: " .. M.message(r), vim.log.levels.ERROR, { title = "pi-ide.nvim" })
  end
  return r.disk_changed
end

return M
