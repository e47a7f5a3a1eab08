-- What tests/context/ asks of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

--- Four diagnostics in the current buffer, one of each severity; the error's columns are bytes
--- on a line with a two-byte character.
function M.four_diagnostics()
  local ns = vim.api.nvim_create_namespace("test")
  local severity = vim.diagnostic.severity
  vim.diagnostic.set(ns, 0, {
    {
      lnum = 1,
      col = 19,
      end_lnum = 1,
      end_col = 20,
      severity = severity.ERROR,
      message = "cannot find value `y`",
      source = "rustc",
      code = "E0425",
    },
    { lnum = 0, col = 3, severity = severity.WARN, message = "unused", source = "clippy" },
    { lnum = 2, col = 0, severity = severity.HINT, message = "a hint" },
    { lnum = 2, col = 0, severity = severity.INFO, message = "info", code = 12 },
  })
end

return M
