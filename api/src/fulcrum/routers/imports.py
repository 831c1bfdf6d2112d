from __future__ import annotations

from fastapi import APIRouter

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Operator
from fulcrum.models import Role
from fulcrum.schemas.imports import ImportRequest, ImportResponse
from fulcrum.services import imports

router = APIRouter(prefix="/imports", tags=["imports"])


@router.post(
    "",
    summary="Import keepalived.conf or ipvsadm rules into the candidate configuration",
    description="mode=preview returns the line-by-line report and what would change; mode=apply writes "
    "the import into the candidate only. Nothing reaches the kernel until a commit (POST /revisions).",
    responses={
        422: {
            "description": "The input cannot be read (too large, not text, an include loop) or the result is "
            "invalid; nothing changed"
        }
    },
)
def run_import(body: ImportRequest, session: SessionDep, user: Operator, actor: ActorDep) -> ImportResponse:
    return imports.run_import(session, actor, body, admin=user.has_role(Role.ADMIN))
