/**
 * A Pi extension for tests of a client of Pi's RPC mode (`pi --mode rpc -e <this file>`, beside
 * the pi-ide extension): it makes Pi send every kind of `extension_ui_request` on demand, and
 * reports what the client answered in a `notify` a test can read back.
 *
 * It imports nothing (the file is loaded from the checkout, where no node_modules resolve), so
 * its tool's parameters are a plain JSON schema.
 *
 * Commands (send them as a `prompt`, e.g. {"type":"prompt","message":"/ui-test"}):
 *   /ui-test      confirm, select, input, editor in turn (each waits for its
 *                 extension_ui_response), then notify
 *                 `ui-test: confirm=<c> select=<s> input=<i> editor=<e>`, each value as JSON
 *                 (`true`, `"beta"`, `"two\nlines"`), `undefined` for a cancelled dialog.
 *   /ui-timeout   a confirm with `timeout: 1500`: Pi resolves it by itself (false) when the client
 *                 does not answer in time; then notify `ui-timeout: confirm=<c>`.
 *   /ui-fire      the fire-and-forget methods: setStatus, setWidget (and clears them with a
 *                 second setStatus/setWidget without text), setTitle, set_editor_text, and a
 *                 notify of each level; the last is notify `ui-fire: done`.
 *   /ui-notify <text>  one notify `<text>` (info).
 * Tool (for the mock model to call, so that a dialog opens in the middle of a run):
 *   ui_ask {question}  asks ctx.ui.confirm(question), answers `ui_ask: confirmed=<bool>`.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const show = (v: unknown): string => (v === undefined ? "undefined" : JSON.stringify(v));

export default function (pi: Any) {
	pi.registerCommand("ui-test", {
		description: "Test: confirm, select, input, editor, then notify what was answered",
		async handler(_args: string, ctx: Any) {
			const confirm = await ctx.ui.confirm("ui-test confirm", "Proceed with the test?");
			const select = await ctx.ui.select("ui-test select", ["alpha", "beta", "gamma"]);
			const input = await ctx.ui.input("ui-test input", "type something");
			const editor = await ctx.ui.editor("ui-test editor", "prefilled line 1\nprefilled line 2");
			ctx.ui.notify(
				`ui-test: confirm=${show(confirm)} select=${show(select)} input=${show(input)} editor=${show(editor)}`,
				"info",
			);
		},
	});

	pi.registerCommand("ui-timeout", {
		description: "Test: a confirm that Pi resolves by itself after 1.5 s",
		async handler(_args: string, ctx: Any) {
			const confirm = await ctx.ui.confirm("ui-timeout confirm", "Answer within 1.5 s", { timeout: 1500 });
			ctx.ui.notify(`ui-timeout: confirm=${show(confirm)}`, "info");
		},
	});

	pi.registerCommand("ui-fire", {
		description: "Test: every fire-and-forget UI method",
		async handler(_args: string, ctx: Any) {
			ctx.ui.setStatus("ui-test", "ui-test status");
			ctx.ui.setWidget("ui-test", ["ui-test widget line 1", "ui-test widget line 2"]);
			ctx.ui.setWidget("ui-test-below", ["ui-test widget below"], { placement: "belowEditor" });
			ctx.ui.setTitle("ui-test title");
			ctx.ui.setEditorText("ui-test editor text");
			ctx.ui.notify("ui-fire: info", "info");
			ctx.ui.notify("ui-fire: warning", "warning");
			ctx.ui.notify("ui-fire: error", "error");
			ctx.ui.setStatus("ui-test", undefined);
			ctx.ui.setWidget("ui-test", undefined);
			ctx.ui.setWidget("ui-test-below", undefined);
			ctx.ui.notify("ui-fire: done", "info");
		},
	});

	pi.registerCommand("ui-notify", {
		description: "Test: one notify with the given text",
		async handler(args: string, ctx: Any) {
			ctx.ui.notify(String(args ?? "").trim(), "info");
		},
	});

	pi.registerTool({
		name: "ui_ask",
		label: "UI ask",
		description: "Test tool: asks the user to confirm a question and returns the answer.",
		parameters: {
			type: "object",
			properties: { question: { type: "string", description: "The question to confirm" } },
			required: ["question"],
		},
		async execute(_toolCallId: string, params: Any, _signal: Any, _onUpdate: Any, ctx: Any) {
			const confirmed = await ctx.ui.confirm("ui_ask", String(params?.question ?? ""));
			return { content: [{ type: "text", text: `ui_ask: confirmed=${confirmed}` }], details: {} };
		},
	});
}
