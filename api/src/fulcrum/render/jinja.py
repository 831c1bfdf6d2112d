"""The one Jinja environment for daemon configs: no HTML escaping (these are not HTML; values are
restricted by the models instead), and a typo in a template is an error, not an empty string."""

from jinja2 import Environment, PackageLoader, StrictUndefined, Template

_ENVIRONMENT = Environment(
    loader=PackageLoader("fulcrum.render", "templates"),
    autoescape=False,  # noqa: S701  (daemon configs, not HTML: see above)
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def template(name: str) -> Template:
    return _ENVIRONMENT.get_template(name)
