-- Gemini CLI: only in the chat (:PiIde chat gemini), in its ACP mode. It reads and writes files
-- through the chat (fs/read_text_file, fs/write_text_file), so its reviews are editable and
-- what the user accepts is what is written. MCP servers given in session/new start only in a
-- folder it trusts (~/.gemini/trustedFolders.json).
return {
  name = "gemini",
  label = "Gemini CLI",
  short = "Gemini",
  install = "npm i -g @google/gemini-cli",
  acp = { cmd = { "gemini", "--acp" }, mcp = "stdio" },
}
