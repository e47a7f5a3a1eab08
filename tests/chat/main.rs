//! The chat (`:PiIde chat`) with fake agents: `fake_pi_rpc`, `fake_acp_agent`, and the core's
//! chat functions as Lua calls them.

#[path = "../support/harness.rs"]
mod harness;
#[path = "../support/mock_http.rs"]
mod mock_http;
#[path = "../support/openai_mock.rs"]
mod openai_mock;
#[path = "../support/pi_cli.rs"]
mod pi_cli;

mod core;
mod fake_acp;
mod fake_pi;
