// Run in a page (Playwright's evaluate): each text in `root` that does not fit its box
// (labels, buttons, the options of a select measured with the select's own font), and
// whether `root` is wider than the room it has. Hidden elements and the preview's cells
// (cut on purpose, with an ellipsis and the whole text as a tooltip) are left out.
(root) => {
  const cut = [];
  const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden";
  for (const e of root.querySelectorAll("label, button, .widget-label, .widget-label-basic")) {
    if (shown(e) && !e.closest(".nsframe-preview") && e.scrollWidth > e.clientWidth + 1) {
      cut.push(`${e.tagName.toLowerCase()} '${e.textContent.trim()}': ${e.scrollWidth} > ${e.clientWidth}`);
    }
  }
  const context = document.createElement("canvas").getContext("2d");
  for (const select of root.querySelectorAll("select")) {
    if (!shown(select)) continue;
    const style = getComputedStyle(select);
    context.font = style.font;
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    for (const option of select.options) {
      const width = context.measureText(option.text).width;
      if (width > room + 1) cut.push(`option '${option.text}': ${Math.ceil(width)} > ${Math.floor(room)}`);
    }
  }
  const box = root.getBoundingClientRect();
  if (root.scrollWidth > root.clientWidth + 1) cut.push(`the widget scrolls: ${root.scrollWidth} > ${root.clientWidth}`);
  if (box.right > window.innerWidth + 1) cut.push(`the widget ends at ${box.right}px, past the window`);
  return cut;
}
