-- Cline (npm `cline`): in the chat (:PiIde chat cline) over ACP (`cline --acp`).
--
-- Its edits come as `apply_patch`: a permission of kind "other" that carries only the patch
-- text. The core applies the patch to each file as it is (src/chat/acp/patch.rs) and opens a
-- review per file; the permission is allowed only once each is accepted with :w, rejected with
-- :q. Cline writes the files itself after the allow: the text the user accepted is set over its
-- write. A patch that cannot be shown exactly (a deletion, a move, lines Cline would place by a
-- guess) is asked as a question without "always", saying so.
--
-- Its ACP mode restores a login only for Cline's own accounts: for a provider signed in with an
-- API key (`cline auth -p <provider> -k <key> ...`, done once by the user) it needs the provider,
-- key and model in its environment, read here from the file `cline auth` writes. Its sessions
-- stay local (CLINE_SESSION_BACKEND_MODE): else it starts a `cline-hub-daemon` in a session of
-- its own, which outlives the chat.
local M = {
  name = "cline",
  label = "Cline",
  short = "Cline",
  install = "npm i -g cline",
}

-- The providers Cline's ACP mode signs in to by itself (OAuth).
local OWN_LOGIN = { cline = true, ["cline-pass"] = true, ["openai-codex"] = true }

--- Where `cline auth` keeps its providers (as Cline finds it).
function M.providers_file()
  local env = vim.env
  if env.CLINE_PROVIDER_SETTINGS_PATH and env.CLINE_PROVIDER_SETTINGS_PATH ~= "" then
    return env.CLINE_PROVIDER_SETTINGS_PATH
  end
  local data = env.CLINE_DATA_DIR
  if not (data and data ~= "") then
    local dir = (env.CLINE_DIR and env.CLINE_DIR ~= "") and env.CLINE_DIR or vim.fs.joinpath(env.HOME or "", ".cline")
    data = vim.fs.joinpath(dir, "data")
  end
  return vim.fs.joinpath(data, "settings", "providers.json")
end

-- The provider `cline auth` set last, and its settings; nil when there is none.
local function last_provider()
  local read, text = pcall(vim.fn.readfile, M.providers_file())
  local ok, decoded = pcall(vim.json.decode, read and table.concat(text, "\n") or "")
  decoded = ok and decoded or nil
  local id = type(decoded) == "table" and decoded.lastUsedProvider
  local entry = type(id) == "string" and type(decoded.providers) == "table" and decoded.providers[id]
  return id, type(entry) == "table" and type(entry.settings) == "table" and entry.settings or nil
end

--- The chat's environment for `cline --acp`: local sessions, and the provider signed in with
--- `cline auth` (what Neovim's environment sets wins).
function M.acp_env()
  local env = { CLINE_SESSION_BACKEND_MODE = "local" }
  local id, settings = last_provider()
  if not (id and settings) or OWN_LOGIN[id] then
    return env
  end
  local own = function(name, value)
    if (vim.env[name] == nil or vim.env[name] == "") and type(value) == "string" and value ~= "" then
      env[name] = value
    end
  end
  own("CLINE_PROVIDER", id)
  -- Its ACP mode needs a key set to take the provider at all (one that needs none gets a word).
  own("CLINE_API_KEY", type(settings.apiKey) == "string" and settings.apiKey ~= "" and settings.apiKey or "none")
  own("CLINE_MODEL", settings.model)
  return env
end

M.acp = {
  cmd = { "cline", "--acp" },
  env = M.acp_env,
  mcp = "stdio",
  login = "cline auth",
}

return M
