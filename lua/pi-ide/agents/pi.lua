-- Pi, with the pi-ide extension (its lockfile is the server's own). A Pi launched from Neovim
-- gets a private PI_IDE_LOCK_DIR holding only this Neovim's lockfile, so it connects here with
-- no picker even when other editors serve the same folder; the chat's Pi gets a folder and a
-- token of its own, by which the chat knows which client is its Pi. The chat window hosts Pi in
-- RPC mode (features/chat/).
local M = {
  name = "pi",
  label = "Pi",
  short = "Pi",
  install = "npm i -g @earendil-works/pi-coding-agent, then: pi install npm:@ldelossa/pi-ide",
  cmd = { "pi" },
  chat = {
    args = { "--mode", "rpc" },
    -- The extension that sends Pi's writes to a review here (it registers the /ide command).
    extension = { command = "ide", install = "pi install npm:@ldelossa/pi-ide" },
  },
}

--- The private lock folder of this Neovim for a launch of Pi (`tag`: the chat's, or none).
function M.lock_dir(tag)
  local name = ("pi-ide-%s.%d"):format(tag or "pi", vim.fn.getpid())
  return vim.fs.joinpath(vim.fn.stdpath("run"), name)
end

-- Lockfiles a Neovim that crashed with our pid left in that folder: Pi must see ours alone.
local function sweep(dir, port)
  for _, file in ipairs(vim.fn.glob(vim.fs.joinpath(dir, "*.lock"), true, true)) do
    if vim.fs.basename(file) ~= port .. ".lock" then
      os.remove(file)
    end
  end
end

---@param launch PiIde.Launch
function M.connect(launch)
  local dir = M.lock_dir(launch.tag)
  sweep(dir, require("pi-ide.core.server").status().port)
  local side, err = require("pi-ide.agents").serve("pi", { lock_dir = dir, tag = launch.tag })
  if not side then
    return nil, "cannot write the lockfile Pi will read: " .. tostring(err)
  end
  return { PI_IDE_LOCK_DIR = dir }
end

return M
