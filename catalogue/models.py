"""The catalogue index: one row per installed package folder, plus child rows for what players
and admins ask about (contracts, runtimes, tools, settings, permissions ...).

Child rows are derived from the normalised manifest and rebuilt in bulk whenever the package's
content changes, so they never need migrations of their own data.
"""

from __future__ import annotations

from django.db import models


class PackageQuerySet(models.QuerySet):
    def loaded(self) -> PackageQuerySet:
        return self.filter(state=Package.State.LOADED)


class Package(models.Model):
    """One installed package folder, as the last sync found it.

    The fields here are the stable core other apps rely on (approvals, worlds, sessions).
    """

    class Trust(models.TextChoices):
        BUNDLED = "bundled", "Bundled"  # shipped in plugins/: trusted
        COMMUNITY = "community", "Community"  # any other folder: needs approval

    class State(models.TextChoices):
        LOADED = "loaded", "Loaded"
        ERROR = "error", "Error"

    class CodeState(models.TextChoices):
        """Whether the package's code (entry, handlers, guards) loads; "" = it has none."""

        NONE = "", "No code"
        LOADED = "loaded", "Code loads"
        CODE_ERROR = "code-error", "Code error"
        NEEDS_APPROVAL = "needs-approval", "Needs approval"

    class Source(models.TextChoices):
        BUNDLED = "bundled", "Bundled"
        USER = "user", "User folder"
        COMMUNITY = "community", "Community folder"

    package_id = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, default="plugin")
    version = models.CharField(max_length=100, default="0.0.0")
    display_name = models.CharField(max_length=300, blank=True)
    description = models.TextField(blank=True)
    source_dir = models.CharField(max_length=1000)
    trust = models.CharField(max_length=20, choices=Trust.choices)
    state = models.CharField(max_length=20, choices=State.choices)
    content_hash = models.CharField(max_length=64)
    # [[path, size, mtime_ns, ctime_ns, inode], ...] of the files content_hash covers, as the
    # sync last found them: all the same means unchanged, without reading a byte
    # (loader.package_stats). [] means not known (first index, or files written during it).
    file_stats = models.JSONField(default=list, blank=True)
    # The normalised manifest (Manifest.data, thawed) when loaded; the raw frontmatter otherwise.
    manifest = models.JSONField(default=dict)
    errors = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # --- Added by the catalogue (0002) ---
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.BUNDLED)
    # The host version the package was validated against: a host upgrade re-parses everything.
    host_version = models.CharField(max_length=100, blank=True)
    # The fingerprint of the loader that judged it (loader.rules_version): new rules re-judge it.
    rules_version = models.CharField(max_length=64, blank=True)
    author_name = models.CharField(max_length=300, blank=True)
    author_url = models.CharField(max_length=2000, blank=True)
    author_about = models.TextField(blank=True)
    license = models.CharField(max_length=200, blank=True)
    homepage = models.CharField(max_length=2000, blank=True)
    covel_range = models.CharField(max_length=200, blank=True)
    entry = models.CharField(max_length=500, blank=True)
    prompt_summary = models.TextField(blank=True)
    # Lower-cased text the database search scans: id, name, description, tags, author, contracts.
    search_text = models.TextField(blank=True)
    # Lower-cased display name, so an exact-name match ranks first on SQLite and PostgreSQL alike.
    name_key = models.CharField(max_length=300, blank=True, db_index=True)
    # Folders that declared the same package id but lost to this one (see docs/catalogue.md).
    shadowed = models.JSONField(default=list)
    # The code check after sync (pluginhost.codecheck.package_code_check): bundled and approved
    # code is imported in a Node host, unapproved community code only parsed (never run).
    code_state = models.CharField(
        max_length=20, choices=CodeState.choices, default=CodeState.NONE, blank=True
    )
    code_error = models.TextField(blank=True)
    # The content hash (and trust) the code state was computed for; another value means the
    # next sync checks again (a row indexed before the check existed, or a new approval).
    code_checked = models.CharField(max_length=100, blank=True)
    # When the package's content last changed (updated_at also moves on bookkeeping writes).
    indexed_at = models.DateTimeField(null=True, blank=True, db_index=True)

    # --- Added by 0003 ---
    # The PLUGIN.md body when no runtime owns it (a package without an inline runtime): notes
    # for people, read by no model. "" when there is none or the inline runtime's prompt is it
    # (Runtime.prompt holds that). NULL only on rows indexed before 0003: the next sync
    # re-indexes them (docs/catalogue.md, "Sync").
    body = models.TextField(null=True, blank=True)

    # --- Added by 0006 ---
    # {locale: {displayName, description, body}} from PLUGIN.<locale>.md and locales/*.yaml
    # (catalogue/locales.py): the catalogue shows them to people who read that language.
    translations = models.JSONField(default=dict, blank=True)
    # --- Added by 0012 ---
    # README.md as the loader read it (catalogue/manifest/loader.py, read_readme), rendered by
    # the detail page: the page reads no package file. "" when there is none; NULL only on rows
    # indexed before 0012: the next sync re-indexes them (docs/catalogue.md, "Sync").
    readme = models.TextField(null=True, blank=True)

    objects = PackageQuerySet.as_manager()

    class Meta:
        ordering = ["package_id"]
        indexes = [
            # The list's order by name, and on SQLite the narrow index a search's page order
            # is found in (catalogue/search.py, _FtsMatch).
            models.Index(fields=["name_key", "package_id"], name="catalogue_package_name_order")
        ]

    def __str__(self) -> str:
        return f"{self.package_id}@{self.version}"

    @property
    def name(self) -> str:
        return self.display_name or self.package_id

    @property
    def is_valid(self) -> bool:
        return self.state == self.State.LOADED


class PackageVersion(models.Model):
    """A version of a package the hub saw before the one installed now, kept when the version on
    disk changes, so the detail page can show the history and what each change did."""

    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="past_versions")
    version = models.CharField(max_length=100)
    content_hash = models.CharField(max_length=64)
    # The normalised manifest as it was indexed (Package.manifest at the time).
    manifest = models.JSONField(default=dict)
    first_seen_at = models.DateTimeField()
    replaced_at = models.DateTimeField()

    class Meta:
        ordering = ["-replaced_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["package", "version", "content_hash"], name="uniq_package_version_seen"
            )
        ]

    def __str__(self) -> str:
        return f"{self.package_id}@{self.version}"


class Contract(models.Model):
    """A versioned contract ID such as narrative-engine@2; @1 and @2 are different rows."""

    contract_id = models.CharField(max_length=200, unique=True)

    class Meta:
        ordering = ["contract_id"]

    def __str__(self) -> str:
        return self.contract_id


class PackagePart(models.Model):
    """Base of every child row: which package it belongs to and its order in the manifest."""

    position = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True
        ordering = ["position"]


class PackageContract(PackagePart):
    class Relation(models.TextChoices):
        PROVIDES = "provides", "Provides"
        REQUIRES = "requires", "Requires"
        CONFLICTS = "conflicts", "Conflicts with"

    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="contract_links")
    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="package_links")
    relation = models.CharField(max_length=20, choices=Relation.choices)
    is_default = models.BooleanField(default=False)  # provides only: the default provider

    class Meta(PackagePart.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["package", "contract", "relation"], name="catalogue_unique_contract_link"
            )
        ]
        indexes = [models.Index(fields=["contract", "relation"])]


class PackageTag(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="tags")
    tag = models.CharField(max_length=200, db_index=True)
    derived = models.BooleanField(default=False)  # ui:* and cost:* tags the loader worked out

    class Meta(PackagePart.Meta):
        constraints = [
            models.UniqueConstraint(fields=["package", "tag"], name="catalogue_unique_tag")
        ]


class ExternalLink(PackagePart):
    """An address a package declares (homepage, author url, author links): the only ones the
    confirmation page will show, so it can never become an open redirect."""

    class Kind(models.TextChoices):
        HOMEPAGE = "homepage", "Homepage"
        AUTHOR = "author", "Author's page"
        AUTHOR_LINK = "author-link", "Author link"

    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="links")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    label = models.CharField(max_length=300)
    url = models.CharField(max_length=2000)


class Runtime(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="runtimes")
    runtime_id = models.CharField(max_length=200)
    qualified_id = models.CharField(max_length=300)
    file = models.CharField(max_length=500)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=20)  # agent | function
    stage = models.CharField(max_length=20, blank=True)
    trigger = models.CharField(max_length=20, default="auto")  # auto | manual | event
    trigger_topic = models.CharField(max_length=200, blank=True)
    model_slot = models.CharField(max_length=100, blank=True)
    visibility = models.CharField(max_length=20, default="system")
    output_contract = models.CharField(max_length=200, blank=True)
    background = models.BooleanField(default=False)
    subagent_only = models.BooleanField(default=False)
    detached = models.BooleanField(default=False)
    settle = models.BooleanField(default=False)
    max_settle_wait_ms = models.PositiveIntegerField(null=True, blank=True)
    max_queue_ms = models.PositiveIntegerField(null=True, blank=True)
    max_execution_ms = models.PositiveIntegerField(null=True, blank=True)
    prompt = models.TextField(blank=True)
    data = models.JSONField(default=dict)

    class Meta(PackagePart.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["package", "runtime_id"], name="catalogue_unique_runtime"
            )
        ]


class Tool(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=200)


class Action(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="actions")
    name = models.CharField(max_length=200)


class Command(PackagePart):
    """A player slash command (/name) and the RPC action it invokes."""

    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="commands")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    action = models.CharField(max_length=200)
    aliases = models.JSONField(default=list)
    context = models.JSONField(default=list)


class CommandArgument(PackagePart):
    command = models.ForeignKey(Command, on_delete=models.CASCADE, related_name="arguments")
    name = models.CharField(max_length=200)
    type = models.CharField(max_length=20, default="string")
    description = models.TextField(blank=True)
    required = models.BooleanField(default=False)
    variadic = models.BooleanField(default=False)
    choices = models.JSONField(default=list)


class ActionKind(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="action_kinds")
    name = models.CharField(max_length=200)
    label = models.CharField(max_length=300, blank=True)
    icon = models.CharField(max_length=100, blank=True)
    placeholder = models.CharField(max_length=500, blank=True)
    roles = models.JSONField(default=list)
    text = models.CharField(max_length=20, default="optional")
    actor = models.BooleanField(default=True)
    schema = models.CharField(max_length=500, blank=True)


class Service(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="services")
    contract = models.CharField(max_length=200)
    access = models.CharField(max_length=10, default="read")
    model_facing = models.BooleanField(default=False)


class Extension(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="extensions")
    point = models.CharField(max_length=200)
    extension_id = models.CharField(max_length=200)
    order = models.IntegerField(default=0)
    slot = models.CharField(max_length=200, blank=True)
    watch = models.JSONField(default=list)
    preview = models.JSONField(default=list)


class Hook(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="hooks")
    event = models.CharField(max_length=40)
    enforce = models.CharField(max_length=10, default="normal")


class Event(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="events")
    topic = models.CharField(max_length=200)
    schema = models.CharField(max_length=500, blank=True)
    description = models.TextField(blank=True)
    advertise = models.BooleanField(default=True)


class Setting(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="settings")
    key = models.CharField(max_length=200)
    type = models.CharField(max_length=20)
    label = models.CharField(max_length=300, blank=True)
    description = models.TextField(blank=True)
    default = models.JSONField(null=True, blank=True)
    has_default = models.BooleanField(default=False)  # null is a legitimate default value
    min = models.FloatField(null=True, blank=True)
    max = models.FloatField(null=True, blank=True)
    step = models.FloatField(null=True, blank=True)


class SettingOption(PackagePart):
    setting = models.ForeignKey(Setting, on_delete=models.CASCADE, related_name="options")
    value = models.CharField(max_length=300)
    label = models.CharField(max_length=300, blank=True)


class Dataset(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=200)
    schema = models.CharField(max_length=500, blank=True)
    key = models.CharField(max_length=200, blank=True)
    ops = models.JSONField(default=list)
    tools = models.JSONField(default=list)
    description = models.TextField(blank=True)


class DataNamespace(PackagePart):
    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="data_namespaces")
    namespace = models.CharField(max_length=200)
    schema = models.CharField(max_length=500, blank=True)
    description = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    accepts = models.JSONField(default=list)
    authoring = models.JSONField(null=True, blank=True)
    search_field = models.CharField(max_length=200, blank=True)


class UISpec(PackagePart):
    class Placement(models.TextChoices):
        VIEW = "view", "Full-column view"
        RIGHT = "right", "Right-panel tab"
        MESSAGE = "message", "Message block"
        SEGMENT = "segment", "Story segment template"

    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="ui_specs")
    placement = models.CharField(max_length=20, choices=Placement.choices)
    path = models.CharField(max_length=500)


class HttpPermission(PackagePart):
    """An HTTPS origin (and methods) a package's own code, or one of its runtimes, may reach."""

    package = models.ForeignKey(Package, on_delete=models.CASCADE, related_name="http_permissions")
    runtime = models.ForeignKey(
        Runtime, on_delete=models.CASCADE, null=True, blank=True, related_name="http_permissions"
    )
    origin = models.CharField(max_length=500)
    methods = models.JSONField(default=list)  # empty: the host's default methods
