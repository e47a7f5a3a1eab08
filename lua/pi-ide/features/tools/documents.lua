-- checkDocumentDirty and saveDocument. The buffer is found by exact path; a file that is not
-- open is reported as such, never guessed at by bufnr() pattern matching.
local buffers = require("pi-ide.core.buffers")

local M = {}

-- A handler for the loaded buffer of exactly args.filePath: `fn(args, buf)`; a document that
-- is not open is answered as such.
local function with_open_buffer(fn)
  return function(args)
    local buf = buffers.find(args.filePath)
    if not buf or not vim.api.nvim_buf_is_loaded(buf) then
      return { success = false, message = "Document not open: " .. args.filePath }
    end
    return fn(args, buf)
  end
end

M.checkDocumentDirty = with_open_buffer(function(args, buf)
  return { success = true, filePath = args.filePath, isDirty = vim.bo[buf].modified, isUntitled = false }
end)

M.saveDocument = with_open_buffer(function(args, buf)
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd("silent write")
  end)
  if not ok then
    return { success = false, filePath = args.filePath, message = "Failed to save file: " .. tostring(err) }
  end
  return { success = true, filePath = args.filePath, saved = true, message = "Document saved successfully" }
end)

return M
