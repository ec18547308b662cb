#include "node/node_config.h"

#include <gtest/gtest.h>

namespace tenzro::node {
namespace {

TEST(NodeConfigTest, FileSetsEveryKindOfValue) {
  NodeConfig c;
  ASSERT_TRUE(LoadConfigText(R"(
data_dir = "/tmp/x"
http = "0.0.0.0:7070"
admin = "127.0.0.1:7071"
threads = 4
max_body_bytes = "1MiB"
debug_routes = true
log_level = "debug"
)", "node.toml", c));
  EXPECT_EQ(c.data_dir, "/tmp/x");
  EXPECT_EQ(c.http, "0.0.0.0:7070");
  EXPECT_EQ(c.admin, "127.0.0.1:7071");
  EXPECT_EQ(c.threads, 4u);
  EXPECT_EQ(c.max_body_bytes, 1u << 20);
  EXPECT_TRUE(c.debug_routes);
  EXPECT_EQ(c.log_level, "debug");
}

TEST(NodeConfigTest, ErrorsNameTheKeyAndLine) {
  NodeConfig c;
  auto unknown = LoadConfigText("threads = 2\nthreadz = 3\n", "node.toml", c);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.error().message().find("'threadz'"), std::string::npos) << unknown.error().message();
  EXPECT_NE(unknown.error().message().find("node.toml:2"), std::string::npos) << unknown.error().message();

  // Dotted keys are TOML tables; arrays feed repeatable keys.
  ASSERT_TRUE(LoadConfigText("[dht]\nport = 4222\n[swarm]\nttl_s = 30\n", "node.toml", c));
  EXPECT_EQ(c.dht_port, 4222);
  EXPECT_EQ(c.swarm_ttl_s, 30u);
  ASSERT_TRUE(LoadConfigText("bootstrap = [\"127.0.0.1:4222\", \"127.0.0.2:4222\"]\n", "node.toml", c));
  EXPECT_EQ(c.bootstrap, (std::vector<std::string>{"127.0.0.1:4222", "127.0.0.2:4222"}));
  auto nested = LoadConfigText("[dht]\nprot = 4222\n", "node.toml", c);
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message().find("'dht.prot'"), std::string::npos);
  auto boot = LoadConfigText("bootstrap = [\"nocolon\"]\n", "node.toml", c);
  ASSERT_FALSE(boot);
  EXPECT_NE(boot.error().message().find("bootstrap"), std::string::npos) << boot.error().message();

  auto bad_value = LoadConfigText("threads = \"many\"\n", "node.toml", c);
  ASSERT_FALSE(bad_value);
  EXPECT_NE(bad_value.error().message().find("'threads'"), std::string::npos);

  auto admin = LoadConfigText("admin = \"0.0.0.0:9\"\n", "node.toml", c);
  ASSERT_FALSE(admin);
  EXPECT_NE(admin.error().message().find("loopback"), std::string::npos);

  auto syntax = LoadConfigText("http = \n", "node.toml", c);
  ASSERT_FALSE(syntax);
  EXPECT_NE(syntax.error().message().find("node.toml:1"), std::string::npos) << syntax.error().message();

  auto missing = LoadConfigFile("/nonexistent/node.toml", c);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(NodeConfigTest, FlagsAndKeysMirror) {
  EXPECT_EQ(FlagNameForKey("max_body_bytes"), "max-body-bytes");
  EXPECT_EQ(FlagNameForKey("dht.port"), "dht-port");
  NodeConfig c;
  ASSERT_TRUE(ApplyConfigValue(c, "http", "http://127.0.0.1:9000"));
  EXPECT_FALSE(ApplyConfigValue(c, "http", "nonsense"));
  EXPECT_FALSE(ApplyConfigValue(c, "job_threads", "0"));
  for (const NodeConfigKey& k : NodeConfigKeys()) EXPECT_NE(std::string(k.help), "") << k.name;
}

TEST(NodeConfigTest, ServeKeys) {
  NodeConfig c;
  EXPECT_TRUE(c.serve.empty());
  ASSERT_TRUE(ApplyConfigValue(c, "serve", "tiny-qwen35moe"));
  ASSERT_TRUE(ApplyConfigValue(c, "api_key", "sk-1"));
  ASSERT_TRUE(ApplyConfigValue(c, "serve_max_active", "4"));
  ASSERT_TRUE(ApplyConfigValue(c, "serve_max_waiting", "0"));
  ASSERT_TRUE(ApplyConfigValue(c, "serve_step_tokens", "64"));
  ASSERT_TRUE(ApplyConfigValue(c, "serve_ctx", "2048"));
  EXPECT_EQ(c.serve_draft_max, 0u);
  ASSERT_TRUE(ApplyConfigValue(c, "serve_draft_max", "6"));
  EXPECT_EQ(c.serve_draft_max, 6u);
  EXPECT_FALSE(ApplyConfigValue(c, "serve_draft_max", "64"));
  ASSERT_TRUE(ApplyConfigValue(c, "serve_session_budget", "1GiB"));
  ASSERT_TRUE(ApplyConfigValue(c, "serve_threads", "3"));
  EXPECT_EQ(c.serve_wire_dtype, runtime::WireDtype::kBf16);
  ASSERT_TRUE(ApplyConfigValue(c, "serve_wire_dtype", "q8_0"));
  EXPECT_EQ(c.serve_wire_dtype, runtime::WireDtype::kQ8_0);
  EXPECT_FALSE(ApplyConfigValue(c, "serve_wire_dtype", "fp8"));
  EXPECT_EQ(c.serve, "tiny-qwen35moe");
  EXPECT_EQ(c.api_key, "sk-1");
  EXPECT_EQ(c.serve_max_active, 4u);
  EXPECT_EQ(c.serve_max_waiting, 0u);
  EXPECT_EQ(c.serve_step_tokens, 64u);
  EXPECT_EQ(c.serve_ctx, 2048u);
  EXPECT_EQ(c.serve_session_budget, 1ull << 30);
  EXPECT_EQ(c.serve_threads, 3u);
  EXPECT_FALSE(ApplyConfigValue(c, "serve_max_active", "0"));
  EXPECT_FALSE(ApplyConfigValue(c, "serve_step_tokens", "0"));
  EXPECT_FALSE(ApplyConfigValue(c, "serve_ctx", "1"));
  EXPECT_FALSE(ApplyConfigValue(c, "serve_session_budget", "0"));
  ASSERT_TRUE(LoadConfigText("serve = \"m\"\napi_key = \"k\"\nserve_ctx = 512\n", "t.toml", c));
  EXPECT_EQ(c.serve, "m");
  EXPECT_EQ(c.serve_ctx, 512u);
}

}  // namespace
}  // namespace tenzro::node
