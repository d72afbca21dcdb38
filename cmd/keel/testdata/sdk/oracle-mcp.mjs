// A stdio MCP server for mcp.test.mjs, built with the official TypeScript MCP SDK that the
// Agent SDK installs beside itself. With ORACLE_PID_FILE set it writes its pid there, so a
// test can see the process end and start again.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = join(process.env.KEEL_AGENT_SDK, 'node_modules');
const load = (p) => import(pathToFileURL(join(modules, p)).href);
const { McpServer } = await load('@modelcontextprotocol/sdk/dist/esm/server/mcp.js');
const { StdioServerTransport } = await load('@modelcontextprotocol/sdk/dist/esm/server/stdio.js');
const zod = await load('zod/index.js');
const z = zod.z ?? zod;

const server = new McpServer({ name: 'oracle', version: '1.0.0' });
server.tool('oracle_add', 'Add two integers', { a: z.number(), b: z.number() },
  async ({ a, b }) => ({ content: [{ type: 'text', text: `ORACLE-SUM=${a + b}` }] }));
await server.connect(new StdioServerTransport());
if (process.env.ORACLE_PID_FILE) writeFileSync(process.env.ORACLE_PID_FILE, String(process.pid));
