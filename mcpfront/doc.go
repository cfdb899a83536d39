// Package mcpfront is the Model Context Protocol front door: it serves the
// gateway's skills to MCP clients (desktop hosts, IDE agents, agent
// frameworks) with the official MCP Go SDK, over stdio and Streamable HTTP.
//
// Every MCP request becomes a Skills Protocol method call through
// dispatch.Front, so identities, namespaces, method permissions, rate
// limits, logs and metrics (front="mcp") are those of the other front
// doors. What a client sees:
//
//   - a tool per action skill (at its default version), named by the skill,
//     which runs execute_skill;
//   - the protocol tools list_skills, describe_skill, read_skill_file,
//     run_code, create_blob and read_blob, for agents that browse;
//   - each skill file as the resource skill://<name>/<version>/<path>, any
//     version's through the template skill://{name}/{version}/{+path}, and
//     the caller's blobs through the template blob://{blob_id};
//   - each instruction skill as a prompt whose message is its SKILL.md body;
//   - completions of the skill:// template's variables and the prompts'
//     version argument, and subscriptions to skill files.
//
// Lists and completions are filtered per identity; a skill reload replaces
// only what changed, the SDK tells sessions that the lists changed, and
// sessions subscribed to a changed skill file get resources/updated.
package mcpfront
