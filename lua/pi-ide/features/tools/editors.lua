-- getOpenEditorTabs, getOpenEditors, getWorkspaceFolders: what is open, in the shapes the
-- pi-ide reference plugin and the other editor integrations of the protocol use.
local buffers = require("pi-ide.core.buffers")

local M = {}

local function file_buffers()
  local out = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.bo[buf].buflisted and buffers.uri(buf) then
      table.insert(out, buf)
    end
  end
  return out
end

local function language(buf)
  local ft = vim.bo[buf].filetype
  return ft ~= "" and ft or "plaintext"
end

--- pi-ide.nvim's tool: a JSON array (an empty one is `[]`).
function M.getOpenEditorTabs()
  local current = vim.api.nvim_get_current_buf()
  local out = {}
  for _, buf in ipairs(file_buffers()) do
    table.insert(out, {
      uri = buffers.uri(buf),
      isActive = buf == current,
      isDirty = vim.bo[buf].modified,
      languageId = language(buf),
    })
  end
  return vim.json.encode(out)
end

--- The editor integrations' shape: `{tabs = [...]}`.
function M.getOpenEditors()
  local current = vim.api.nvim_get_current_buf()
  local tab = vim.api.nvim_tabpage_get_number(0)
  local tabs = {}
  for _, buf in ipairs(file_buffers()) do
    local path = vim.api.nvim_buf_get_name(buf)
    table.insert(tabs, {
      uri = buffers.uri(buf),
      isActive = buf == current,
      isPinned = false,
      isPreview = false,
      isDirty = vim.bo[buf].modified,
      label = vim.fs.basename(path),
      groupIndex = tab - 1,
      viewColumn = tab,
      isGroupActive = true,
      fileName = path,
      languageId = language(buf),
      lineCount = vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_line_count(buf) or 0,
      isUntitled = false,
    })
  end
  return vim.json.encode({ tabs = tabs })
end

function M.getWorkspaceFolders()
  local folders = {}
  for _, path in ipairs(require("pi-ide.core.workspace").folders()) do
    table.insert(folders, { name = vim.fs.basename(path), uri = vim.uri_from_fname(path), path = path })
  end
  return vim.json.encode({ success = true, folders = folders, rootPath = vim.fn.getcwd() })
end

return M
