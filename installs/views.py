"""Staff pages: add a package (upload, link, directory) with a preview before anything is
written, the installed list with updates, jobs with their progress, the directory."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from installs import remote
from installs.directory import directory_source_set, directory_sync
from installs.jobs import job_create
from installs.models import DirectorySource, InstallJob
from installs.pages import zip_confirm, zip_preview
from installs.selectors import (
    directory_entries,
    directory_entry_get,
    installation_list,
    job_get,
    job_list,
)
from installs.services import InstallProblem, sessions_using, uninstall


def _staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied("only staff may install packages")


def _refused(request: HttpRequest, exc: InstallProblem) -> None:
    where = exc.details.get("entry") or exc.details.get("step") or ""
    messages.error(request, f"{where + ': ' if where else ''}{exc.message}")


@require_http_methods(["GET", "POST"])
@login_required
def add(request: HttpRequest) -> HttpResponse:
    _staff(request)
    context: dict[str, Any] = {"url": request.POST.get("url", request.GET.get("url", ""))}
    if request.method == "POST":
        try:
            if request.POST.get("what") == "zip":
                upload = request.FILES.get("file")
                if upload is None:
                    raise InstallProblem("choose a ZIP file first", code="no_file")
                data = upload.read(20 * 1024 * 1024 + 1)
                context["zip_item"] = zip_preview(data=data, filename=upload.name or "upload.zip")
            else:
                context["preview"] = remote.collection_preview(url=context["url"])
        except InstallProblem as exc:
            _refused(request, exc)
    return render(request, "installs/add.html", context)


@require_POST
@login_required
def confirm(request: HttpRequest) -> HttpResponse:
    _staff(request)
    if request.POST.get("accept_risk") != "yes":
        messages.error(request, "Tick the box: you reviewed what it asks for.")
        return redirect("installs:add")
    try:
        if request.POST.get("zip_token"):
            done = zip_confirm(token=request.POST["zip_token"], actor=request.user)
            messages.success(request, f"Installed {done['id']}; it waits for approval.")
            return redirect("catalogue:detail", done["id"])
    except InstallProblem as exc:
        _refused(request, exc)
        return redirect("installs:add")
    picked = request.POST.getlist("token")
    if not picked:
        messages.error(request, "Pick at least one package.")
        return redirect("installs:add")
    params = {"token": picked[0]} if len(picked) == 1 else {"tokens": picked}
    job = job_create(kind=InstallJob.Kind.INSTALL, params=params, actor=request.user)
    return redirect("installs:job", job.pk)


@require_GET
@login_required
def job(request: HttpRequest, job_id: int) -> HttpResponse:
    _staff(request)
    row = job_get(job_id=job_id)
    if row is None:
        raise Http404("no such install job")
    template = "installs/_job.html" if request.headers.get("HX-Request") else "installs/job.html"
    return render(request, template, {"job": row})


@require_GET
@login_required
def installed(request: HttpRequest) -> HttpResponse:
    _staff(request)
    return render(
        request,
        "installs/installed.html",
        {"rows": installation_list(), "jobs": job_list(limit=10)},
    )


@require_POST
@login_required
def check(request: HttpRequest, package_id: str) -> HttpResponse:
    _staff(request)
    job = job_create(
        kind=InstallJob.Kind.CHECK, params={"package_id": package_id}, actor=request.user
    )
    return redirect("installs:job", job.pk)


@require_http_methods(["GET", "POST"])
@login_required
def update(request: HttpRequest, package_id: str) -> HttpResponse:
    _staff(request)
    if request.method == "POST":
        if request.POST.get("accept_risk") != "yes":
            messages.error(request, "Tick the box: you reviewed the update.")
            return redirect("installs:update", package_id)
        job = job_create(
            kind=InstallJob.Kind.UPDATE, params={"token": request.POST["token"]}, actor=request.user
        )
        return redirect("installs:job", job.pk)
    found: dict[str, Any] = {}
    try:
        found = remote.update_check(package_id=package_id)
    except InstallProblem as exc:
        _refused(request, exc)
    return render(request, "installs/update.html", {"package_id": package_id, "found": found})


@require_http_methods(["GET", "POST"])
@login_required
def remove(request: HttpRequest, package_id: str) -> HttpResponse:
    _staff(request)
    if request.method == "POST":
        try:
            uninstall(package_id=package_id, detach=request.POST.get("detach") == "yes")
        except InstallProblem as exc:
            _refused(request, exc)
            return redirect("installs:remove", package_id)
        messages.success(request, f"Uninstalled {package_id}; its approval journal is kept.")
        return redirect("installs:installed")
    return render(
        request,
        "installs/remove.html",
        {"package_id": package_id, "sessions": sessions_using(package_id)},
    )


@require_GET
def directory(request: HttpRequest) -> HttpResponse:
    q, category = request.GET.get("q", ""), request.GET.get("category", "")
    from catalogue.models import Package

    installed_ids = set(Package.objects.values_list("package_id", flat=True))
    entries = list(directory_entries(q=q, category=category))
    context = {
        "entries": entries,
        "installed": installed_ids,
        "q": q,
        "category": category,
        "categories": ["narrative", "gameplay", "world", "media", "tools", "authoring"],
        "source": DirectorySource.objects.first(),
    }
    return render(request, "installs/directory.html", context)


@require_GET
def directory_detail(request: HttpRequest, entry_id: str) -> HttpResponse:
    entry = directory_entry_get(entry_id=entry_id)
    if entry is None:
        raise Http404("no such directory entry")
    from catalogue.models import Package

    return render(
        request,
        "installs/directory_detail.html",
        {"entry": entry, "installed": Package.objects.filter(package_id=entry.entry_id).exists()},
    )


@require_POST
@login_required
def directory_set(request: HttpRequest) -> HttpResponse:
    _staff(request)
    try:
        if request.POST.get("refresh"):
            source = DirectorySource.objects.first()
            if source is None:
                raise InstallProblem("no directory configured yet", code="no_directory")
            source = directory_sync(source=source)
        else:
            source = directory_source_set(
                kind=request.POST.get("kind", ""), location=request.POST.get("location", "").strip()
            )
        messages.success(
            request,
            f"Directory read: {source.entries.count()} entries, {len(source.problems)} refused.",
        )
    except InstallProblem as exc:
        _refused(request, exc)
    return redirect("installs:directory")
