-- What tests/install/ asks of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

--- An in-process language server, enough to attach with workspace folders: rooted at `dir`,
--- whose one workspace folder has `dir`'s URI and a display name of its own.
function M.start_fake_lsp(dir)
  vim.lsp.start({
    name = "fake",
    cmd = function()
      return {
        request = function(method, _, callback)
          if method == "initialize" then
            callback(nil, { capabilities = {} })
          end
          return true, 1
        end,
        notify = function()
          return true
        end,
        is_closing = function()
          return false
        end,
        terminate = function() end,
      }
    end,
    root_dir = dir,
    workspace_folders = { { uri = vim.uri_from_fname(dir), name = "A Display Name" } },
  })
end

--- Every option of the config spec by its dotted path, groups too, sorted.
function M.option_paths()
  local out = {}
  local function walk(node, prefix)
    for name, rule in pairs(node) do
      table.insert(out, prefix .. name)
      if not rule.is_option then
        walk(rule, prefix .. name .. ".")
      end
    end
  end
  walk(require("pi-ide.core.config").spec, "")
  table.sort(out)
  return out
end

--- Every message the user was shown: noice's history and :messages.
function M.messages()
  local out = {}
  local ok, manager = pcall(require, "noice.message.manager")
  if ok then
    for _, m in ipairs(manager.get(nil, { history = true })) do
      table.insert(out, m:content())
    end
  end
  table.insert(out, vim.fn.execute("messages"))
  return table.concat(out, "\n")
end

return M
