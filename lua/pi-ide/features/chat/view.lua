-- The conversation buffer: read-only Markdown that only this file changes. Text streams in at
-- the end (nvim_buf_set_text, so nothing else is redrawn); thinking and each tool run are
-- blocks under a header line, folded once complete; windows whose cursor is on the last line
-- follow the end.
--
-- Folds are manual, made when a block is complete: a block being written stays open (the user
-- sees a tool's output stream), and nothing evaluates a foldexpr on every streamed line.
-- Complete blocks are extmark ranges (they move with the text), so a window opened later gets
-- the same folds.
local M = {}

local ns = vim.api.nvim_create_namespace("pi-ide-chat")

-- Each chat has a conversation of its own (`M.of(name, label)`), named "<label> chat" ("Pi
-- chat"): no slash, so that a tab label shows it whole.
local labels = { pi = "Pi" }
local function name_of(chat)
  return (labels[chat] or chat) .. " chat"
end

-- The buffer's state: buf, tail ("text"|"thinking"|"line"|nil: what the last line holds),
-- thinking = row of the open thinking block's header, tools = { [toolCallId] = { header = row,
-- first = row, last = exclusive row } } (0-based rows) for tools still running. `view` is the
-- chat being drawn (`current`), one of `views`.
local views, current = {}, "pi"
local view

-- :bd leaves the buffer valid but unloaded and empty: that conversation is gone.
local function valid()
  return view and vim.api.nvim_buf_is_loaded(view.buf)
end

local function create()
  if view and vim.api.nvim_buf_is_valid(view.buf) then
    pcall(vim.api.nvim_buf_delete, view.buf, { force = true })
  end
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, name_of(current))
  vim.bo[buf].undolevels = -1
  vim.bo[buf].modifiable = false
  vim.b[buf].pi_ide_chat = true
  -- Its own filetype (for your autocmds), Markdown's highlighting. Treesitter's Markdown
  -- parser reparses the whole conversation on every change (measured: 28 ms per append at
  -- 2,000 lines, 10 to 50 ms per streamed draw), which would stall typing while Pi streams;
  -- Vim's Markdown syntax only looks at what is on screen. `chat.treesitter = true` takes
  -- treesitter anyway.
  vim.bo[buf].filetype = "pi-ide-chat"
  if not (require("pi-ide.core.config").values.chat.treesitter and pcall(vim.treesitter.start, buf, "markdown")) then
    vim.bo[buf].syntax = "markdown"
  end
  view = { buf = buf, tools = {} }
  views[current] = view
end

function M.buf()
  if not valid() then
    create()
  end
  return view.buf
end

-- Folds rows [first, last] in `win` (closed, as :fold makes them).
local function fold_in(win, first, last)
  pcall(vim.api.nvim_win_call, win, function()
    vim.cmd(("silent! %d,%dfold"):format(first + 1, last + 1))
  end)
end

-- A block is complete: it folds, in every window showing the chat, and in windows to come.
local function close_block(first, last)
  vim.api.nvim_buf_set_extmark(view.buf, ns, first, 0, { end_row = last, end_col = 0 })
  for _, win in ipairs(vim.fn.win_findbuf(view.buf)) do
    fold_in(win, first, last)
  end
end

--- A new window on a chat: the complete blocks fold there too.
function M.refold(win)
  local buf = vim.api.nvim_win_get_buf(win)
  for name, v in pairs(views) do
    if v.buf == buf then
      current, view = name, v
    end
  end
  if not (valid() and view.buf == buf) then
    return
  end
  pcall(vim.api.nvim_win_call, win, function()
    vim.cmd("silent! normal! zE")
  end)
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(view.buf, ns, 0, -1, { details = true })) do
    fold_in(win, m[2], m[4].end_row)
  end
end

--- For 'foldtext': the block's header and how many lines it folds.
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  return ("%s  (%d lines)"):format(first, vim.v.foldend - vim.v.foldstart)
end

-- Windows (any tab page) showing the chat whose cursor is on the last line: they follow.
local function followers()
  local last = vim.api.nvim_buf_line_count(view.buf)
  local out = {}
  for _, win in ipairs(vim.fn.win_findbuf(view.buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= last then
      table.insert(out, win)
    end
  end
  return out
end

-- The cursor goes to the end of the last line: a long wrapped line shows its end.
local function follow(wins)
  if #wins == 0 then
    return
  end
  local last = vim.api.nvim_buf_line_count(view.buf)
  local col = math.max(0, #vim.api.nvim_buf_get_lines(view.buf, last - 1, last, false)[1] - 1)
  for _, win in ipairs(wins) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, col })
  end
end

-- Replaces rows [first, last) with `lines`, keeping the running tools' rows in step.
local function splice(first, last, lines)
  local wins = followers()
  local delta = #lines - (last - first)
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, first, last, false, lines)
  vim.bo[view.buf].modifiable = false
  if delta ~= 0 then
    -- Blocks after the change move; `last` is an exclusive end, so a block that ends where
    -- lines are appended stays as it is.
    for _, t in pairs(view.tools) do
      for _, k in ipairs({ "header", "first" }) do
        if t[k] >= last then
          t[k] = t[k] + delta
        end
      end
      if t.last > first and t.last >= last then
        t.last = t.last + delta
      end
    end
    if view.thinking and view.thinking >= last then
      view.thinking = view.thinking + delta
    end
  end
  follow(wins)
end

local function line_count()
  return vim.api.nvim_buf_line_count(view.buf)
end

-- The thinking being written is complete (something else comes): it folds.
local function end_thinking()
  if view.thinking then
    close_block(view.thinking, line_count() - 1)
    view.thinking = nil
  end
end

-- Appends whole lines at the end. The buffer starts with one empty line, which the first
-- append replaces.
local function append_lines(lines)
  end_thinking()
  local n = line_count()
  local empty = n == 1 and vim.api.nvim_buf_get_lines(view.buf, 0, 1, false)[1] == ""
  if empty and #lines > 1 and lines[1] == "" then
    table.remove(lines, 1) -- no blank line at the top
  end
  splice(empty and 0 or n, n, lines)
  view.tail = "line"
end

--- Appends streamed text of `kind` ("text" or "thinking") at the end, continuing the last
--- line when it holds the same kind.
function M.stream(kind, text)
  M.buf()
  if text == "" then
    return
  end
  if view.tail ~= kind then
    append_lines(kind == "thinking" and { "", "💭 thinking", "" } or { "", "" })
    if kind == "thinking" then
      view.thinking = line_count() - 2
    end
    view.tail = kind
  end
  local parts = vim.split(text, "\n", { plain = true })
  local row = line_count() - 1
  local col = #vim.api.nvim_buf_get_lines(view.buf, row, row + 1, false)[1]
  local wins = followers()
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_text(view.buf, row, col, row, col, parts)
  vim.bo[view.buf].modifiable = false
  follow(wins)
end

--- The turn is over: an open thinking block folds.
function M.finish()
  if valid() then
    end_thinking()
  end
end

--- A line (or lines) on their own: a user's prompt, a retry, an error.
function M.lines(lines)
  M.buf()
  append_lines(vim.list_extend({ "" }, lines))
end

--- Lines at the top of the conversation (what is true of the whole chat: writes not
--- reviewed, or connected); a new banner replaces the old.
function M.banner(lines)
  M.buf()
  local n = line_count()
  if not view.banner and n == 1 and vim.api.nvim_buf_get_lines(view.buf, 0, 1, false)[1] == "" then
    splice(0, 1, lines) -- an empty chat
    view.banner = #lines
  elseif view.banner then
    splice(0, view.banner, lines)
    view.banner = #lines
  else
    splice(0, 0, vim.list_extend(vim.deepcopy(lines), { "" }))
    view.banner = #lines + 1
  end
  view.tail = view.tail or "line"
end

--- The user's prompt, as its own section; `how`: "steer" or "followUp" when sent while Pi works;
--- `who`: the heading of the answer (Pi's: "π").
function M.user(text, how, who)
  local title = how == "steer" and "## ❯ You (steering)" or how == "followUp" and "## ❯ You (follow-up)" or "## ❯ You"
  M.lines(vim.list_extend({ title }, vim.split(text, "\n", { plain = true })))
  M.lines({ "## " .. (who or "π") })
end

-- A tool's arguments in one short line: the path or command when there is one.
local function summary(name, args)
  if type(args) ~= "table" then
    return name
  end
  local main = args.path or args.file_path or args.command or args.pattern or args.url
  -- (An ACP agent's title names the file already, or its name.)
  local file = type(args.path) == "string" and args.path or type(args.file_path) == "string" and args.file_path
  local named = type(main) == "string" and (name:find(main, 1, true) or (file and name:find(vim.fs.basename(file), 1, true)))
  if type(main) == "string" and not named then
    return ("%s %s"):format(name, (main:gsub("\n.*", " …")))
  end
  return name
end

local STATUS = { running = "…", done = "✓", failed = "✗" }

local function tool_header(t)
  return ("⚙ %s %s"):format(t.summary, STATUS[t.status])
end

local function body(lines, more)
  local out = { "```" }
  vim.list_extend(out, lines or {})
  if more and more > 0 then
    table.insert(out, ("… %d more lines"):format(more))
  end
  table.insert(out, "```")
  return out
end

local function redraw_tool(id, lines, more)
  local t = view and view.tools[id]
  if not t then
    return
  end
  t.lines, t.more = lines, more
  local content = vim.deepcopy(t.args)
  if lines and #lines > 0 then
    table.insert(content, "── output")
    vim.list_extend(content, lines)
  end
  local new_body = body(content, more)
  splice(t.first, t.last, new_body)
  t.last = t.first + #new_body
  splice(t.header, t.header + 1, { tool_header(t) })
end

-- The core hands a JSON null to Lua as a light userdata NULL, which vim.json.encode writes as
-- nothing (`"move_path":,`): as vim.NIL it is written `null`.
local function with_nulls(v)
  if type(v) == "userdata" and v ~= vim.NIL then
    return vim.NIL
  elseif type(v) ~= "table" then
    return v
  end
  local out = {}
  for k, x in pairs(v) do
    out[k] = with_nulls(x)
  end
  return setmetatable(out, getmetatable(v))
end

-- A tool's arguments as the lines of its block.
local function args_lines(args)
  return vim.split(vim.json.encode(with_nulls(args)), "\n", { plain = true })
end

--- A tool run begins: a folded block (header, arguments, output). A block already open for
--- `id` takes the new name and arguments in place (an agent may say what a call is only later).
function M.tool_start(id, name, args)
  M.buf()
  local open = view.tools[id]
  if open then
    open.summary = name ~= "" and summary(name, args) or open.summary
    open.args = args and args_lines(args) or open.args
    return redraw_tool(id, open.lines, open.more)
  end
  local t = { summary = summary(name, args), status = "running" }
  -- (An ACP agent may give none.)
  local arg_lines = args and args_lines(args) or {}
  append_lines({ "", tool_header(t) })
  t.header = line_count() - 1
  t.args = arg_lines
  append_lines(body(arg_lines))
  t.first, t.last = t.header + 1, line_count()
  view.tools[id] = t
end


--- Whether tool `id`'s block is open (running).
function M.has_tool(id)
  return valid() and view.tools[id] ~= nil
end

--- Streamed output of a running tool (the latest, capped by the core).
function M.tool_output(id, lines, more)
  redraw_tool(id, lines, more)
end

--- The tool finished. `name`: its block's title when no start was seen (an ACP agent may send
--- only the end of a call it asked permission for); without it such an end is dropped.
function M.tool_end(id, lines, more, failed, name)
  if name and name ~= "" and valid() and not view.tools[id] then
    M.tool_start(id, name, nil)
  end
  local t = view and view.tools[id]
  if not t then
    return
  end
  t.status = failed and "failed" or "done"
  redraw_tool(id, lines, more)
  view.tools[id] = nil
  close_block(t.header, t.last - 1)
end

--- Pi went away: the tools it was running failed with it (their blocks say so and fold).
function M.fail_running()
  if not valid() then
    return
  end
  for id, t in pairs(vim.deepcopy(view.tools)) do
    M.tool_end(id, t.lines, t.more, true) -- the output it had shown stays
  end
  M.finish()
end

--- Whatever is on screen goes: a new session.
function M.clear()
  if valid() then
    vim.bo[view.buf].modifiable = true
    vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, {})
    vim.bo[view.buf].modifiable = false
    vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
    view.tools, view.tail, view.thinking, view.banner = {}, nil, nil, nil
  end
end

--- This module drawing chat `name`'s conversation (its buffer named after `label`): every
--- function of it, for that chat.
function M.of(name, label)
  labels[name] = label or labels[name]
  return setmetatable({}, {
    -- Each function wrapped once (kept in the table): a streamed draw allocates nothing here.
    __index = function(bound, key)
      local fn = M[key]
      local wrapped = function(...)
        current, view = name, views[name]
        return fn(...)
      end
      rawset(bound, key, wrapped)
      return wrapped
    end,
  })
end

--- The whole text (tests, and the header's check).
function M.text()
  return valid() and table.concat(vim.api.nvim_buf_get_lines(view.buf, 0, -1, false), "\n") or ""
end

return M
