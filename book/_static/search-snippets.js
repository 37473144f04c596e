/* A search result quotes the page's text around the words found (Sphinx's searchtools.js reads it from the
   page's HTML). That HTML holds each equation as its TeX source, which MathJax draws only on the page itself,
   so a quote would show "\(1/c\)": here every equation is left out of the quoted text, "…" in its place. */
(() => {
  const withoutMath = () => {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.withoutMath) return;
    const toText = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const page = new DOMParser().parseFromString(htmlString, "text/html");
      page.querySelectorAll(".math").forEach((math) => math.replaceWith("…"));
      return toText(page.documentElement.outerHTML, anchor);
    };
    Search.htmlToText.withoutMath = true;
  };
  // searchtools.js comes before this file on most pages, after it on the search page; results are quoted
  // only after DOMContentLoaded (Search.init), from pages fetched later still
  withoutMath();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", withoutMath);
})();
