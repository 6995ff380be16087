window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: document.body.dataset.specUrl,
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
