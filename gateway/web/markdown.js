// markdown.js: a model's answer as Markdown, rendered as untrusted input.
//
// markdown-it (vendored, see vendor.sh) parses CommonMark with tables and
// strikethrough. It is set up so that what it returns is safe to put in
// the page as HTML, whatever the model wrote:
//   - html: false — raw HTML in the text (<script>, <img onerror=…>) is
//     escaped and shows as text; markdown-it never passes it through.
//   - links: only http:, https: and mailto: destinations become links
//     (validateLink); javascript:, data:, vbscript:, file: and relative
//     ones stay text. Links open in a new tab, without a referrer.
//   - images: never loaded (a remote image would tell its server who
//     reads the answer, and the panel's CSP refuses them anyway); an image
//     becomes a link to it, labelled with its alt text, or just the alt
//     text inside a link.
//   - everything else markdown-it writes (code, tables, lists, emphasis)
//     is its own markup around escaped text.
import markdownit from 'markdown-it';

/** safeLink matches the destinations that may become links. */
const safeLink = /^(https?:|mailto:)/i;

const md = markdownit({ html: false, linkify: true, typographer: false });
md.validateLink = (url) => safeLink.test(url.trim());

const attrs = (tokens, idx, name, value) => tokens[idx].attrSet(name, value);

// Links open in a new tab and tell the site nothing about the panel.
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  attrs(tokens, idx, 'target', '_blank');
  attrs(tokens, idx, 'rel', 'noopener noreferrer nofollow');
  return self.renderToken(tokens, idx, options);
};

// An image is a link to it labelled "image: " and its alt text (or just the
// alt text when already inside a link).
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const t = tokens[idx];
  const src = t.attrGet('src') || '';
  const label = md.utils.escapeHtml(self.renderInlineAsText(t.children || [], options, env) || src);
  if (insideLink(tokens, idx) || !safeLink.test(src)) return label;
  return `<a href="${md.utils.escapeHtml(src)}" target="_blank" rel="noopener noreferrer nofollow" class="md-image">image: ${label}</a>`;
};

// Wide tables scroll sideways in their own box instead of widening the
// message.
md.renderer.rules.table_open = () => '<div class="md-table"><table>\n';
md.renderer.rules.table_close = () => '</table></div>\n';

// A table column's alignment is a class, not markdown-it's style
// attribute, which the panel's CSP (style-src 'self') would refuse.
md.core.ruler.push('align_class', (state) => {
  for (const t of state.tokens) {
    if (t.type !== 'th_open' && t.type !== 'td_open') continue;
    const m = /text-align:(left|center|right)/.exec(t.attrGet('style') || '');
    if (!m) continue;
    t.attrs = t.attrs.filter(([name]) => name !== 'style');
    t.attrSet('class', `md-${m[1]}`);
  }
});

/** insideLink reports whether the inline token at idx lies in a link. */
function insideLink(tokens, idx) {
  let depth = 0;
  for (let i = idx - 1; i >= 0; i--) {
    if (tokens[i].type === 'link_close') depth--;
    if (tokens[i].type === 'link_open') depth++;
  }
  return depth > 0;
}

/** Renders Markdown text as safe HTML (see the file's comment). */
export function markdown(text) {
  return md.render(text || '');
}
