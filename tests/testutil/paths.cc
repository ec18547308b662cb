// The only test code that knows where the checkout and the build directory
// are. The paths come in as compile definitions on this file alone
// (tests/CMakeLists.txt), so every other test object is the same in any
// checkout and a compiler cache (ccache with CCACHE_BASEDIR) can share it
// between clones in different folders.
#include <string>

#include "testutil/testutil.h"

namespace tenzro::testing {

std::string DataPath(const std::string& name) { return std::string(TENZRO_SOURCE_DIR "/tests/data/") + name; }
std::string TenzroBin() { return TENZRO_BIN; }
std::string ProjectSourceDir() { return TENZRO_SOURCE_DIR; }
std::string ProjectBuildDir() { return TENZRO_BUILD_DIR; }

}  // namespace tenzro::testing
