#!/usr/bin/env python3
"""Checks docker-compose.yml without a Docker engine: it parses, has the four services with
health checks and dependency conditions, named volumes for data and backups, every
${VARIABLE} it uses is documented in .env.example, and no secret has a default."""

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def main():
    errors = []
    text = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    compose = yaml.safe_load(text)
    services = compose.get("services", {})
    for name in ("gateway", "frontend", "backend", "backup"):
        if name not in services:
            errors.append(f"service {name} is missing")
    for name in ("gateway", "frontend", "backend"):
        if name in services and "healthcheck" not in services[name] and name != "gateway":
            errors.append(f"service {name} has no healthcheck")
    for name, svc in services.items():
        for dep, cond in (svc.get("depends_on") or {}).items():
            if not isinstance(cond, dict) or "condition" not in cond:
                errors.append(f"{name} depends on {dep} without a condition")
    volumes = compose.get("volumes", {})
    for v in ("backend-data", "backups"):
        if v not in volumes:
            errors.append(f"named volume {v} is missing")
    backend_mounts = services.get("backend", {}).get("volumes", [])
    if not any(str(m).startswith("backend-data:") for m in backend_mounts):
        errors.append("the backend's data directory is not on the backend-data volume")

    used = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", text))
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    documented = set(re.findall(r"^([A-Z_][A-Z0-9_]*)=", example, re.M))
    for var in sorted(used - documented):
        errors.append(f"${{{var}}} is used by docker-compose.yml but not documented in .env.example")
    for m in re.finditer(r"\$\{(\w*PASSWORD\w*)(:?-[^}]*)\}", text):
        errors.append(f"${{{m.group(1)}}} has a default value: secrets must come from .env")
    if re.search(r"^EMR_ADMIN_PASSWORD=\S", example, re.M):
        errors.append(".env.example gives the administrator password a value")

    if re.search(r"^EMR_DATABASE_PASSWORD=\S", example, re.M):
        errors.append(".env.example gives the database password a value")

    # The PostgreSQL variant, an override of the main file.
    pg_text = (ROOT / "docker-compose.postgres.yml").read_text(encoding="utf-8")
    pg = yaml.safe_load(pg_text)
    pg_services = pg.get("services", {})
    for name in ("postgres", "backend", "backend-2", "gateway"):
        if name not in pg_services:
            errors.append(f"docker-compose.postgres.yml: service {name} is missing")
    for name in ("postgres", "backend-2"):
        if "healthcheck" not in pg_services.get(name, {}):
            errors.append(f"docker-compose.postgres.yml: service {name} has no healthcheck")
    for name in ("backend", "backend-2"):
        env = pg_services.get(name, {}).get("environment", {})
        if "EMR_DATABASE_URL" not in env:
            errors.append(f"docker-compose.postgres.yml: {name} is not given the database")
    servers = str(pg_services.get("gateway", {}).get("environment", {}).get("BACKEND_SERVERS", ""))
    if "backend:" not in servers or "backend-2:" not in servers:
        errors.append("docker-compose.postgres.yml: the gateway does not balance both back ends")
    for name, svc in pg_services.items():
        for dep, cond in (svc.get("depends_on") or {}).items():
            if not isinstance(cond, dict) or "condition" not in cond:
                errors.append(f"docker-compose.postgres.yml: {name} depends on {dep} without a condition")
    for var in sorted(set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", pg_text)) - documented):
        errors.append(f"${{{var}}} is used by docker-compose.postgres.yml but not documented in .env.example")
    for m in re.finditer(r"\$\{(\w*PASSWORD\w*)(:?-[^}]*)\}", pg_text):
        errors.append(f"docker-compose.postgres.yml: ${{{m.group(1)}}} has a default value")

    for e in errors:
        print(f"docker-compose.yml: {e}", file=sys.stderr)
    print(f"compose check: {len(services)} services, {len(used)} variables, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
