#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>

#include "dpushard/frames/image.hpp"

namespace dpushard {

bool is_image_file_name(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

}  // namespace dpushard
