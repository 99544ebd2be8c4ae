// Typesets the math that pymdownx.arithmatex (generic mode) leaves in the page as
// <span class="arithmatex">\(...\)</span> and <div class="arithmatex">\[...\]</div>,
// with the KaTeX copy shipped in docs/assets/katex/ (no network). Runs on every page load,
// including mkdocs-material's instant navigation (document$).
(function () {
  function typeset(root) {
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      if (el.dataset.typeset) return;
      var tex = el.textContent.trim();
      var display = el.tagName === "DIV";
      tex = tex.replace(/^\\[(\[]/, "").replace(/\\[)\]]$/, "");
      katex.render(tex, el, { displayMode: display, throwOnError: false });
      el.dataset.typeset = "1";
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(function () { typeset(document); });
  } else {
    document.addEventListener("DOMContentLoaded", function () { typeset(document); });
  }
})();
