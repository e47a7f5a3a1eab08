-- checkDocumentDirty and saveDocument. The buffer is found by exact path; a file that is not
-- open is reported as such, never guessed at by bufnr() pattern matching.
local buffers = require("pi-ide.buffers")

local M = {}

-- The loaded buffer of exactly this file, or nil and the answer for a document not open.
local function open_buffer(path)
  local buf = buffers.find(path)
  if not buf or not vim.api.nvim_buf_is_loaded(buf) then
    return nil, { success = false, message = "Document not open: " .. path }
  end
  return buf
end

function M.dirty(args)
  local buf, not_open = open_buffer(args.filePath)
  if not buf then
    return not_open
  end
  return { success = true, filePath = args.filePath, isDirty = vim.bo[buf].modified, isUntitled = false }
end

function M.save(args)
  local buf, not_open = open_buffer(args.filePath)
  if not buf then
    return not_open
  end
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd("silent write")
  end)
  if not ok then
    return { success = false, filePath = args.filePath, message = "Failed to save file: " .. tostring(err) }
  end
  return { success = true, filePath = args.filePath, saved = true, message = "Document saved successfully" }
end

return M
