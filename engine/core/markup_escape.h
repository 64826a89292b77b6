// Escaping text for HTML and XML (SVG) the way MarkupSafe does (Jinja2's escape filter): & < > " ' become
// &amp; &lt; &gt; &#34; &#39;, valid in element text and in quoted attributes of both.
#pragma once

#include <string>
#include <string_view>

namespace arach {

std::string EscapeMarkup(std::string_view text);

}  // namespace arach
