-- What a prompt brings besides its text, for an ACP agent: `@path` sends the file as a resource
-- link, `#selection` the latest selection, `#buffer` the file it is in, `#diagnostics` that
-- file's diagnostics. In the prompt area, typing `@`, `#` or `/` (at the start: the agent's
-- commands) offers completions (omnifunc: <C-x><C-o> again).
local M = {}

local TAGS = {
  { word = "#selection", menu = "the latest selection" },
  { word = "#buffer", menu = "the file of the latest selection" },
  { word = "#diagnostics", menu = "that file's diagnostics" },
}

local function latest_selection()
  local native = require("pi-ide.core.native").get()
  local s = native and native.selection_last()
  return type(s) == "table" and s or nil
end

local function link(path)
  return { type = "resource_link", uri = vim.uri_from_fname(path), name = vim.fs.basename(path) }
end

local function resolve(word, cwd)
  local path = word:sub(1, 1) == "/" and word or vim.fs.normalize(vim.fs.joinpath(cwd, word))
  return vim.uv.fs_stat(path) and path or nil
end

local function diagnostics_text(path)
  local buf = require("pi-ide.core.buffers").find(path)
  local lines = {}
  for _, d in ipairs(buf and vim.diagnostic.get(buf) or {}) do
    local severity = vim.diagnostic.severity[d.severity] or "?"
    table.insert(lines, ("%s:%d:%d: %s: %s"):format(vim.fn.fnamemodify(path, ":~:."), d.lnum + 1, d.col + 1, severity, d.message))
  end
  return #lines > 0 and table.concat(lines, "\n") or ("no diagnostics in " .. vim.fn.fnamemodify(path, ":~:."))
end

-- The blocks `#tag` brings (none when there is nothing to bring).
local function tag_blocks(tag)
  local s = latest_selection()
  local path = s and type(s.filePath) == "string" and s.filePath ~= "" and s.filePath or nil
  if tag == "selection" and s and type(s.text) == "string" and s.text ~= "" then
    local from = s.selection and s.selection.start and s.selection.start.line or 0
    local head = ("Selected in %s, from line %d:"):format(vim.fn.fnamemodify(path or "?", ":~:."), from + 1)
    return { { type = "text", text = head .. "\n```\n" .. s.text .. "\n```" } }
  elseif tag == "buffer" and path then
    return { link(path) }
  elseif tag == "diagnostics" and path then
    return { { type = "text", text = diagnostics_text(path) } }
  end
  return {}
end

--- The prompt as ACP content blocks: the text, then what its @files and #tags bring.
function M.blocks(text, cwd)
  local out = { { type = "text", text = text } }
  local seen = {}
  for mark, word in text:gmatch("([@#])([^%s]+)") do
    local key = mark .. word
    if not seen[key] then
      seen[key] = true
      if mark == "@" then
        local path = resolve(word, cwd)
        if path then
          table.insert(out, link(path))
        end
      else
        vim.list_extend(out, tag_blocks(word))
      end
    end
  end
  return out
end

-- Completions for `base` (it starts with its mark).
local function candidates(base, chat)
  local mark, rest = base:sub(1, 1), base:sub(2)
  if mark == "@" then
    return vim.tbl_map(function(f)
      return { word = "@" .. f, menu = "file" }
    end, vim.fn.getcompletion(rest, "file"))
  elseif mark == "#" then
    return vim.tbl_filter(function(t)
      return t.word:sub(1, #base) == base
    end, TAGS)
  end
  local out = {}
  for _, c in ipairs(chat and chat.commands or {}) do
    if type(c) == "table" and type(c.name) == "string" and ("/" .. c.name):sub(1, #base) == base then
      table.insert(out, { word = "/" .. c.name, menu = c.description })
    end
  end
  return out
end

--- The prompt area's omnifunc.
function M.omni(findstart, base)
  local line, col = vim.api.nvim_get_current_line(), vim.api.nvim_win_get_cursor(0)[2]
  if findstart == 1 then
    local start = col
    while start > 0 and not line:sub(start, start):match("%s") do
      start = start - 1
    end
    local mark = line:sub(start + 1, start + 1)
    local command = mark == "/" and start == 0
    return (mark == "@" or mark == "#" or command) and start or -3
  end
  local name = vim.b.pi_ide_chat_agent
  return candidates(base, name and require("pi-ide.features.chat.acp").get(name))
end

--- Completion in prompt buffer `buf`: the omnifunc, offered as `@`, `#` or a leading `/` is typed.
function M.attach(buf)
  vim.bo[buf].omnifunc = "v:lua.require'pi-ide.features.chat.acp.context'.omni"
  vim.api.nvim_create_autocmd("InsertCharPre", {
    buffer = buf,
    callback = function()
      local c = vim.v.char
      local at_start = vim.api.nvim_win_get_cursor(0)[2] == 0
      if c == "@" or c == "#" or (c == "/" and at_start) then
        vim.schedule(function()
          if vim.api.nvim_get_current_buf() == buf and vim.fn.mode() == "i" and vim.fn.pumvisible() == 0 then
            vim.api.nvim_feedkeys(vim.keycode("<C-x><C-o>"), "n", false)
          end
        end)
      end
    end,
  })
end

return M
