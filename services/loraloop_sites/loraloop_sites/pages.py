"""The shared page layout (inline Jinja2 templates) and HTML responses of both sites."""

from __future__ import annotations

from collections.abc import Callable

import jinja2
from fastapi.responses import HTMLResponse

LAYOUT = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }} · {{ site.name }}</title>
<style>
  body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Arial, sans-serif; color: #111; background: #f4f5f7; }
  header { display: flex; gap: 18px; align-items: center; padding: 10px 20px; background: {{ site.color }}; color: #fff; }
  header a { color: #fff; text-decoration: none; }
  header .brand { font-size: 22px; font-weight: 700; letter-spacing: -0.5px; }
  header nav { display: flex; gap: 14px; margin-left: auto; }
  header form { display: flex; flex: 1; max-width: 560px; }
  header input[type=search] { flex: 1; padding: 7px 10px; border: 0; border-radius: 4px 0 0 4px; }
  header form button { border-radius: 0 4px 4px 0; }
  main { max-width: 1040px; margin: 18px auto; padding: 18px 24px; background: #fff; border-radius: 6px; }
  aside { float: left; width: 170px; }
  aside + section { margin-left: 190px; }
  button, .button { padding: 6px 12px; border: 1px solid #b5b5b5; border-radius: 4px; background: #ffd814; cursor: pointer; font: inherit; color: #111; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 7px 8px; border-bottom: 1px solid #e3e3e3; vertical-align: top; }
  .muted { color: #666; } .price { font-weight: 700; color: #b12704; } .unread { font-weight: 700; }
  .status { padding: 8px 12px; background: #e7f4e4; border-radius: 4px; }
  .error { padding: 8px 12px; background: #fde8e8; border-radius: 4px; }
  label { display: block; margin-top: 10px; font-weight: 600; }
  input[type=text], input[type=email], textarea, select { padding: 6px; font: inherit; }
  fieldset label { display: inline; font-weight: 400; margin-right: 14px; }
  .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
</style>
</head>
<body>
<header>
  <a class="brand" href="{{ site.home }}">{{ site.name }}</a>
  {% block search %}{% endblock %}
  <nav aria-label="Main">{% for label, href in nav %}<a href="{{ href }}">{{ label }}</a>{% endfor %}</nav>
</header>
<main>
{% if notice %}<p role="status" class="status">{{ notice }}</p>{% endif %}
{% block main %}{% endblock %}
</main>
</body>
</html>
"""  # noqa: E501 - HTML and CSS the site serves: a line broken in the template would change its pages

ERROR = """{% extends "layout.html" %}
{% block main %}
<h1>{{ title }}</h1>
<p role="alert" class="error">{{ message }}</p>
<p><a href="{{ site.home }}">Back to {{ site.name }}</a></p>
{% endblock %}
"""

READY = """{% extends "layout.html" %}
{% block main %}
<h1>Ready</h1>
<p>Run <code>{{ run_id }}</code> of {{ site.name }} starts from a fresh state{% if task_id %} for task <code>{{ task_id }}</code>{% endif %}.</p>
<p><a href="{{ site.home }}">Go to {{ site.name }}</a></p>
{% endblock %}
"""  # noqa: E501 - HTML and CSS the site serves: a line broken in the template would change its pages

FINISH = """{% extends "layout.html" %}
{% block main %}
<h1>Finished</h1>
<p>Run <code>{{ run_id }}</code>{% if task_id %}, task <code>{{ task_id }}</code>{% endif %}.</p>
<pre>{{ document }}</pre>
{% endblock %}
"""


class Site:
    """What the layout needs to know about one site: its name, home, header colour and navigation."""

    def __init__(
        self, name: str, home: str, color: str, nav: Callable[[dict], list[tuple[str, str]]], templates: dict[str, str]
    ) -> None:
        self.name, self.home, self.color, self._nav = name, home, color, nav
        loader = jinja2.DictLoader(
            {"layout.html": LAYOUT, "error.html": ERROR, "ready.html": READY, "finish.html": FINISH, **templates}
        )
        self._env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)
        self._env.filters["money"] = lambda value: f"${value:,.2f}"

    def render(self, template: str, state: dict, status: int = 200, **context) -> HTMLResponse:
        """Render a page of this site with its header navigation, which depends on the run's state."""
        context.setdefault("notice", "")
        context.setdefault("title", self.name)
        html = self._env.get_template(template).render(site=self, nav=self._nav(state), **context)
        return HTMLResponse(html, status_code=status)

    def error(self, state: dict, message: str, status: int = 400) -> HTMLResponse:
        """A 4xx page whose alert names what was wrong, so agents and people can recover."""
        title = "Please check your input" if status == 400 else "Not found"
        return self.render("error.html", state, status=status, title=title, message=message)


class BadInput(Exception):
    """A form or query the site rejects; the app answers it with the site's 4xx page naming the field."""

    def __init__(self, site: Site, message: str, state: dict | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.site, self.message, self.state, self.status = site, message, state or {}, status

    def response(self) -> HTMLResponse:
        """The error page for this rejection."""
        return self.site.error(self.state, self.message, status=self.status)
