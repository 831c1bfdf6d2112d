from __future__ import annotations

from fastapi import APIRouter, status

from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Viewer
from fulcrum.openapi import NOT_FOUND
from fulcrum.routers.one_writer import any_node
from fulcrum.routers.params import RowId
from fulcrum.schemas.auth import TokenCreate, TokenCreated, TokenRead, TokensList
from fulcrum.services import users

router = APIRouter(prefix="/tokens", tags=["tokens"], responses=NOT_FOUND)


@router.get("", summary="Your API tokens")
def list_tokens(user: Viewer) -> TokensList:
    rows = users.list_tokens(user)
    return TokensList(data=[TokenRead.model_validate(t) for t in rows], count=len(rows))


@router.post(
    "", status_code=status.HTTP_201_CREATED, summary="Create an API token (its secret is shown once)"
)
@any_node
def create_token(body: TokenCreate, session: SessionDep, user: Viewer, actor: ActorDep) -> TokenCreated:
    token, secret = users.create_token(session, actor, user, body)
    return TokenCreated(**TokenRead.model_validate(token).model_dump(), token=secret)


@router.delete("/{token_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Revoke an API token")
@any_node
def delete_token(token_id: RowId, session: SessionDep, user: Viewer, actor: ActorDep) -> None:
    users.delete_token(session, actor, user, token_id)
