/* mcp_rpc.c - one JSON-RPC 2.0 message of the Model Context Protocol in,
 * its reply out (https://www.jsonrpc.org/specification; MCP's lifecycle:
 * initialize, notifications/initialized, ping; its tools: tools/list,
 * tools/call).
 *
 *   message      = request | notification | response
 *   request      = {"jsonrpc":"2.0", "id": string|number, "method": string[, "params": {}]}
 *   notification = a request without "id": never answered, even when wrong
 *   response     = {"jsonrpc":"2.0", "id", "result"|"error"}: ignored (we send no requests)
 *
 * Decisions (conf/MCP.md): a batch (an array) is refused with -32600, as
 * MCP 2025-06-18 removed batching; requests before initialize are
 * answered, since every tool is scoped to the session's worktree from its
 * start and MCP's stateless revision (2026-07-28) has no handshake; a
 * tools/call the client cancelled while it waited (mcp_wait.c) is not
 * answered, as MCP's "Cancellation" says. */
#include "mcp.h"

#include <stdio.h>
#include <string.h>

#include "host.h"

/* The protocol versions this server speaks, newest first. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

/* The instructions (mcp_instructions) name the worktree, its fronts and
 * the daemon's state, as they are when the session starts. */
#define INSTRUCTIONS_MAX (3 * PATH_MAX + 2048)

json_t *mcp_rpc_error(json_t *id, int code, const char *message, const char *data)
{
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (err && data)
        json_object_set_new(err, "data", json_string(data));
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
                     err);
}

static json_t *result(json_t *id, json_t *res)
{
    return res ? json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", res) : NULL;
}

/* initialize: the client's protocolVersion when we speak it, else our
 * newest (the client then decides whether to go on). */
static json_t *initialize(struct mcp *m, json_t *id, json_t *params)
{
    static char instructions[INSTRUCTIONS_MAX];
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    if (!asked)
        return mcp_rpc_error(id, MCP_INVALID_PARAMS, "Invalid params",
                             "initialize needs params.protocolVersion, a string such as "
                             "\"2025-06-18\"");
    const char *v = versions[0];
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
        if (strcmp(asked, versions[i]) == 0)
            v = versions[i];
    mcp_instructions(m, instructions, sizeof instructions);
    return result(id, json_pack("{s:s, s:{s:{}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", v,
                                "capabilities", "tools", "serverInfo", "name", "wtproxy", "title",
                                "wtproxy", "version", host_build(), "instructions", instructions));
}

static json_t *tools_call(struct mcp *m, json_t *id, json_t *params)
{
    json_t *name = json_object_get(params, "name"), *args = json_object_get(params, "arguments");
    char err[512];
    int code = MCP_INVALID_PARAMS;
    if (!json_is_string(name))
        return mcp_rpc_error(id, code, "Invalid params",
                             "tools/call needs params.name, a string (see tools/list)");
    if (args && !json_is_object(args) && !json_is_null(args))
        return mcp_rpc_error(id, code, "Invalid params", "params.arguments must be an object");
    m->call_id = id; /* what a notifications/cancelled names (mcp_wait.c) */
    m->cancelled = 0;
    json_t *res = mcp_tools_call(m, json_string_value(name), json_is_null(args) ? NULL : args,
                                 &code, err, sizeof err);
    m->call_id = NULL;
    if (m->cancelled) { /* MCP: the receiver does not answer a cancelled request */
        json_decref(res);
        return NULL;
    }
    return res ? result(id, res) : mcp_rpc_error(id, code, "Invalid params", err);
}

/* The reply to request method of id with params (an object or NULL). */
static json_t *request(struct mcp *m, json_t *id, const char *method, json_t *params)
{
    if (strcmp(method, "initialize") == 0)
        return initialize(m, id, params);
    if (strcmp(method, "ping") == 0)
        return result(id, json_object());
    if (strcmp(method, "tools/list") == 0)
        return result(id, mcp_tools_list());
    if (strcmp(method, "tools/call") == 0)
        return tools_call(m, id, params);
    char data[256];
    snprintf(data, sizeof data,
             "no method \"%.64s\": wtproxy mcp answers initialize, ping, "
             "tools/list and tools/call",
             method);
    return mcp_rpc_error(id, MCP_METHOD_NOT_FOUND, "Method not found", data);
}

json_t *mcp_rpc_message(struct mcp *m, json_t *msg)
{
    if (json_is_array(msg))
        return mcp_rpc_error(NULL, MCP_INVALID_REQUEST, "Invalid Request",
                             "a batch (an array) is not accepted: MCP 2025-06-18 removed "
                             "JSON-RPC batching; send one message a line");
    if (!json_is_object(msg))
        return mcp_rpc_error(NULL, MCP_INVALID_REQUEST, "Invalid Request",
                             "a message is a JSON object");
    json_t *id = json_object_get(msg, "id"), *method = json_object_get(msg, "method"),
           *params = json_object_get(msg, "params");
    if (id && !json_is_string(id) && !json_is_number(id))
        return mcp_rpc_error(NULL, MCP_INVALID_REQUEST, "Invalid Request",
                             "\"id\" must be a string or a number");
    if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
        strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0)
        return mcp_rpc_error(id, MCP_INVALID_REQUEST, "Invalid Request",
                             "\"jsonrpc\" must be \"2.0\"");
    if (!method && id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
        return NULL; /* a response: we never asked anything */
    if (!json_is_string(method))
        return mcp_rpc_error(id, MCP_INVALID_REQUEST, "Invalid Request",
                             "\"method\" must be a string");
    if (!id) /* a notification (initialized, cancelled, ...): nothing to do, no reply */
        return NULL;
    if (params && !json_is_object(params))
        return mcp_rpc_error(id, MCP_INVALID_PARAMS, "Invalid params",
                             "\"params\" must be an object");
    return request(m, id, json_string_value(method), params);
}

json_t *mcp_rpc_parse(const char *line, size_t len, json_t **reply)
{
    json_error_t je;
    json_t *msg = json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    *reply = NULL;
    if (!msg) {
        char data[256];
        snprintf(data, sizeof data, "not JSON: %s at byte %d", je.text, je.position);
        *reply = mcp_rpc_error(NULL, MCP_PARSE_ERROR, "Parse error", data);
    }
    return msg;
}
