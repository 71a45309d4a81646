// Small behaviours every page shares. They live here, not in inline handlers, so that the
// Content-Security-Policy can refuse inline script.
(() => {
  // A control marked data-autosubmit submits its form when it changes (the world picker).
  document.addEventListener("change", (event) => {
    const control = event.target.closest("[data-autosubmit]");
    if (control && control.form) control.form.requestSubmit();
  });

  // A button marked data-confirm asks first, and does nothing when the answer is no.
  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-confirm]");
    if (button && !window.confirm(button.dataset.confirm)) event.preventDefault();
  });

  // A slider shows its value as it moves.
  document.addEventListener("input", (event) => {
    const input = event.target;
    if (input.matches('input[type="range"][data-output]')) {
      const output = document.getElementById(input.dataset.output);
      if (output) output.value = input.value;
    }
  });
})();
