"""Login, first-run setup, users and API tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints

from fulcrum.config.types import JsonInteger
from fulcrum.models.user import Role

Username = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")]
# Long passphrases are welcome; 12 characters is the floor for an appliance's admin account.
Password = Annotated[str, StringConstraints(min_length=12, max_length=256)]


class SetupStatus(BaseModel):
    needs_setup: bool


class SetupRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    username: Username
    password: Password


class LoginRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    username: str = Field(max_length=64)
    password: str = Field(max_length=256)


class UserRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    username: str
    role: Role
    disabled: bool
    created_at: datetime


class Me(UserRead):
    # Where this request came from as the appliance sees it: what the management firewall
    # matches, so the dashboard can tell whether an allow-list would lock its user out.
    client_address: str


class LoginResponse(BaseModel):
    token: str
    expires_at: datetime
    user: UserRead


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    username: Username
    password: Password
    role: Role = Role.VIEWER


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    password: Password | None = None
    role: Role | None = None
    disabled: StrictBool | None = None


class ManagedUser(UserRead):
    """A user as admins see it: with the login throttle's state for the account."""

    failed_logins: int = Field(
        description="Failed logins against this account in the last hour (0 after a success)"
    )
    locked_until: datetime | None = Field(
        description="Until when logins to this account are refused (429); null: not locked"
    )


class UsersList(BaseModel):
    data: list[ManagedUser]
    count: int


class PasswordChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    current_password: str = Field(max_length=256)
    new_password: Password
    # Every other session and API token of the user is revoked; this one stays unless false.
    keep_this_session: StrictBool = Field(
        default=True,
        description="Keep the session (or API token) this request is made with; false signs it out too",
    )


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")]
    expires_in_days: Annotated[int, Field(ge=1, le=3650), JsonInteger] | None = None


class TokenRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    name: str
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None


class TokenCreated(TokenRead):
    token: str  # shown once


class TokensList(BaseModel):
    data: list[TokenRead]
    count: int
